package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/idempotency"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

// A retryably failed charge is not answered from storage: a retry with the same key runs the
// same logical operation again, on the same charge and under the same processor key, after the
// network rules decide again on the card read now.
func TestBeginChargeRetriesAFailedCharge(t *testing.T) {
	t.Parallel()
	// A card with a never-class decline on record is refused by the rules.
	neverCard := &charge.Card{Fingerprint: "fp_never_retry", Network: "visa", ExpMonth: 12, ExpYear: 2034}
	tests := []struct {
		name    string
		card    *charge.Card
		refused bool
		// taken makes another live charge take the reference while the first is failed.
		taken bool
		want  charge.Status
		// decisions are the network rules' decisions recorded for the charge, as allowed
		// or not: a refusal, or a reattempt's admission, is recorded; an attempt on a card in
		// no run of declines is no reattempt.
		decisions []bool
	}{
		{name: "card still unreadable", want: charge.StatusFailed},
		{name: "card read and admitted", card: testCard, want: charge.StatusProcessing},
		{name: "card read and refused", card: neverCard, refused: true, want: charge.StatusFailed, decisions: []bool{false}},
		{name: "reference taken meanwhile", card: testCard, taken: true, want: charge.StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tx := dbtest.Tx(t)
			db := store.New(tx)
			newMerchant(t, db, "m1")
			declines(t, db, "m1", neverCard, 1, decline.Never)
			fp := idempotency.Fingerprint{7}
			params := func(card *charge.Card) charge.BeginParams {
				return charge.BeginParams{MerchantID: "m1", Key: "k", Fingerprint: fp, LockFor: time.Minute,
					New: newCharge("m1", "order-1"), Card: card}
			}

			// The first request could not read the card: the charge is stored failed,
			// retryably, and its answer is not kept.
			first, err := charge.Begin(ctx, db, params(nil))
			if err != nil {
				t.Fatal(err)
			}
			c := first.Charge
			if !first.Created || c.Status != charge.StatusFailed || c.Failure == nil || !c.Failure.Retryable {
				t.Fatalf("first request: got %+v, want a charge failed retryably", first)
			}
			if err := db.FinishCharge(ctx, charge.FinishParams{MerchantID: "m1", Key: "k", Charge: c,
				Reason: c.Failure.Code, ReleaseKey: true}); err != nil {
				t.Fatal(err)
			}
			var other charge.Plan
			if tt.taken {
				other = begin(t, db, "m1", "k_other", idempotency.Fingerprint{8}, newCharge("m1", "order-1"))
				if !other.Created {
					t.Fatalf("another charge with the failed charge's reference: got %+v, want it created", other)
				}
			}

			again, err := charge.Begin(ctx, db, params(tt.card))
			if err != nil {
				t.Fatal(err)
			}
			if again.Verdict != idempotency.Proceed || again.Created || again.PriorStatus != charge.StatusFailed {
				t.Fatalf("retry: got %+v, want the failed charge taken up again", again)
			}
			if again.Charge == nil || again.Charge.ID != c.ID || again.Charge.ProcessorKey != c.ProcessorKey {
				t.Fatalf("retry: got charge %+v, want %s under %s", again.Charge, c.ID, c.ProcessorKey)
			}
			if got := again.Refused != nil; got != tt.refused {
				t.Fatalf("retry: refused %v", again.Refused)
			}
			if tt.taken && again.DuplicateOf != other.Charge.ID {
				t.Fatalf("retry: DuplicateOf %q, want %s", again.DuplicateOf, other.Charge.ID)
			}

			stored, err := db.Charge(ctx, "m1", c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if stored.Status != tt.want {
				t.Fatalf("stored charge: status %s, want %s", stored.Status, tt.want)
			}
			var cardAttempts int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM card_attempts WHERE charge_id = $1`, c.ID).Scan(&cardAttempts); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 1, false: 0}[tt.want == charge.StatusProcessing]; cardAttempts != want {
				t.Fatalf("card attempts of the charge: got %d, want %d (one only once it may reach the processor)", cardAttempts, want)
			}
			var decisions []bool
			if err := tx.QueryRow(ctx, `SELECT coalesce(array_agg(allowed ORDER BY at), '{}') FROM reattempt_decisions
				WHERE merchant_id = 'm1' AND at > $2 AND (charge_id IS NULL OR charge_id = $1)`,
				c.ID, first.Now).Scan(&decisions); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(decisions) != fmt.Sprint(tt.decisions) {
				t.Fatalf("decisions recorded: got %v, want %v", decisions, tt.decisions)
			}
			if tt.want == charge.StatusProcessing && (stored.Card == nil || stored.Card.Fingerprint != tt.card.Fingerprint) {
				t.Fatalf("stored charge: card %+v, want the card read on the retry", stored.Card)
			}

			// A retry that did not take the charge up leaves the key free once answered (the
			// service stores the answer of a charge it does not carry): the next retry with the
			// same key is not told that the first still runs.
			if tt.want == charge.StatusFailed {
				if again.Refused == nil && again.DuplicateOf == "" {
					if err := db.FinishCharge(ctx, charge.FinishParams{MerchantID: "m1", Key: "k", Charge: again.Charge,
						Reason: c.Failure.Code, ReleaseKey: true}); err != nil {
						t.Fatal(err)
					}
				}
				next, err := charge.Begin(ctx, db, params(nil))
				if err != nil {
					t.Fatal(err)
				}
				if next.Verdict != idempotency.Proceed || next.Charge == nil || next.Charge.ID != c.ID {
					t.Fatalf("next retry: got %+v, want the same failed charge again", next)
				}
			}
		})
	}
}

// A key whose first request created no charge (the network rules refused it, or its reference
// was live on another charge) stays bound to that request: a retry with the same key creates
// the charge once nothing stands in its way any more, and later retries replay it.
func TestBeginChargeKeyWithoutCharge(t *testing.T) {
	t.Parallel()
	for _, why := range []string{"refused by the network rules", "reference live on another charge"} {
		t.Run(why, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tx := dbtest.Tx(t)
			db := store.New(tx)
			newMerchant(t, db, "m1")
			fp := idempotency.Fingerprint{9}
			params := func() charge.BeginParams {
				return charge.BeginParams{MerchantID: "m1", Key: "k", Fingerprint: fp, LockFor: time.Minute,
					New: newCharge("m1", "order-2"), Card: testCard}
			}
			var live charge.Plan
			lift := func() {}
			if why == "refused by the network rules" {
				// A decline asking to wait an hour (Mastercard advice 24) refuses the card now.
				b := beginWith(t, db, "m1", "k_advice", testCard)
				c := b.Charge
				c.Status = charge.StatusDeclined
				if err := db.FinishCharge(ctx, charge.FinishParams{MerchantID: "m1", Key: "k_advice", Charge: c,
					ResponseStatus: 402, ResponseBody: []byte("{}"),
					Card: &charge.CardOutcome{Outcome: decline.Declined, Class: decline.Funds, MAC: decline.MACRetryAfter1Hour}}); err != nil {
					t.Fatal(err)
				}
				lift = func() {
					// The hour passes.
					if _, err := tx.Exec(ctx, `UPDATE charges SET card_at = card_at - interval '2 hours' WHERE id = $1`, c.ID); err != nil {
						t.Fatal(err)
					}
					if _, err := tx.Exec(ctx, `UPDATE card_states SET stale = true`); err != nil {
						t.Fatal(err)
					}
				}
			} else {
				live = begin(t, db, "m1", "k_live", idempotency.Fingerprint{10}, newCharge("m1", "order-2"))
			}
			first, err := charge.Begin(ctx, db, params())
			if err != nil {
				t.Fatal(err)
			}
			if first.Created || first.Charge != nil || (first.Refused == nil && first.DuplicateOf == "") {
				t.Fatalf("first request: got %+v, want no charge", first)
			}

			// What stood in the way is gone: the rule lifted, or the live charge declined.
			lift()
			if live.Charge != nil {
				c := live.Charge
				c.Status = charge.StatusDeclined
				if err := db.FinishCharge(ctx, charge.FinishParams{MerchantID: "m1", Key: "k_live", Charge: c,
					ResponseStatus: 402, ResponseBody: []byte(`{}`)}); err != nil {
					t.Fatal(err)
				}
			}
			again, err := charge.Begin(ctx, db, params())
			if err != nil {
				t.Fatal(err)
			}
			if again.Verdict != idempotency.Proceed || !again.Created || again.Charge == nil ||
				again.Charge.Status != charge.StatusProcessing {
				t.Fatalf("retry: got %+v, want the charge created", again)
			}
			// Another body under the key is still another request.
			if b, err := charge.Begin(ctx, db, charge.BeginParams{MerchantID: "m1", Key: "k",
				Fingerprint: idempotency.Fingerprint{11}, LockFor: time.Minute, New: newCharge("m1", "")}); err != nil ||
				b.Verdict != idempotency.Mismatch {
				t.Fatalf("other body under the key: got %+v, %v; want Mismatch", b, err)
			}
			c := again.Charge
			c.Status = charge.StatusSucceeded
			if err := db.FinishCharge(ctx, charge.FinishParams{MerchantID: "m1", Key: "k", Charge: c,
				Card: &charge.CardOutcome{Outcome: decline.Approved}, ResponseStatus: 200, ResponseBody: []byte(`{"ok":1}`)}); err != nil {
				t.Fatal(err)
			}
			replay, err := charge.Begin(ctx, db, params())
			if err != nil {
				t.Fatal(err)
			}
			if replay.Verdict != idempotency.Replay || replay.Record.ChargeID != c.ID || string(replay.Record.ResponseBody) != `{"ok":1}` {
				t.Fatalf("after the charge succeeded: got %+v, want its answer replayed", replay)
			}
		})
	}
}
