package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/idempotency"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

// A run that stalled past its key's lock may finish after its charge was settled without it
// (by the completer, a retry, reconciliation or an operator). Its outcome then changes
// nothing: not the charge, not the key's stored answer, not the audit trail. A pending charge
// never becomes failed, and takes an approval or a decline.
func TestFinishChargeKeepsASettledOutcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		settled, late charge.Status
		stored        bool // whether the late outcome is stored
	}{
		{charge.StatusSucceeded, charge.StatusPending, false},
		{charge.StatusSucceeded, charge.StatusDeclined, false},
		{charge.StatusDeclined, charge.StatusSucceeded, false},
		{charge.StatusPending, charge.StatusFailed, false},
		{charge.StatusPending, charge.StatusSucceeded, true},
		{charge.StatusPending, charge.StatusDeclined, true},
		{charge.StatusSucceeded, charge.StatusSucceeded, true},
	}
	for _, tt := range tests {
		t.Run(string(tt.settled)+" then "+string(tt.late), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tx := dbtest.Tx(t)
			db := store.New(tx)
			newMerchant(t, db, "m1")
			b := begin(t, db, "m1", "k", idempotency.Fingerprint{1}, newCharge("m1", ""))
			finish := func(status charge.Status, body string) error {
				c := *b.Charge
				c.Status = status
				if status == charge.StatusFailed {
					c.Failure = &charge.Failure{Code: "invalid_request"}
				}
				outcome := map[charge.Status]decline.Outcome{charge.StatusSucceeded: decline.Approved,
					charge.StatusDeclined: decline.Declined, charge.StatusPending: decline.Pending}[status]
				p := charge.FinishParams{MerchantID: "m1", Key: "k", Charge: &c, ResponseStatus: 200, ResponseBody: []byte(body),
					Attempts: []charge.Attempt{{StartedAt: time.Now(), Class: "success", HTTPStatus: 200}}}
				if outcome != "" {
					p.Card = &charge.CardOutcome{Outcome: outcome}
				}
				return db.FinishCharge(ctx, p)
			}
			if err := finish(tt.settled, `"settled"`); err != nil {
				t.Fatal(err)
			}
			err := finish(tt.late, `"late"`)
			if tt.stored != (err == nil) || (err != nil && !errors.Is(err, charge.ErrSettled)) {
				t.Fatalf("late finish: %v, want stored %v (or ErrSettled)", err, tt.stored)
			}
			got, err := db.Charge(ctx, "m1", b.Charge.ID)
			if err != nil {
				t.Fatal(err)
			}
			want, attempts, answer := tt.settled, 1, `"settled"`
			if tt.stored {
				want, attempts, answer = tt.late, 2, `"late"`
			}
			if got.Status != want || got.Attempts != attempts {
				t.Fatalf("charge: %s with %d attempts, want %s with %d", got.Status, got.Attempts, want, attempts)
			}
			if r := begin(t, db, "m1", "k", idempotency.Fingerprint{1}, newCharge("m1", "")); string(r.Record.ResponseBody) != answer {
				t.Fatalf("stored answer: %q, want %q", r.Record.ResponseBody, answer)
			}
		})
	}
}
