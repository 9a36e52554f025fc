package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"

	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/retry"
)

// fakeReads answers at once: a retrieve of "pi_" + charge id finds that charge's succeeded
// PaymentIntent; lists and searches find nothing.
type fakeReads struct{}

var answered = processor.ReadResult{Outcome: retry.Outcome{Class: retry.ClassSuccess, HTTPStatus: 200}}

func (fakeReads) Retrieve(_ context.Context, id string) (processor.Intent, processor.ReadResult) {
	return processor.Intent{ID: id, Status: "succeeded", Amount: 1999, Currency: "usd", Customer: "cus_test1",
		PaymentMethod: "pm_card_visa", ChargeID: strings.TrimPrefix(id, "pi_")}, answered
}

func (fakeReads) ListByCreated(context.Context, time.Time, time.Time, string, int) (processor.IntentPage, processor.ReadResult) {
	return processor.IntentPage{}, answered
}

func (fakeReads) SearchByCharge(context.Context, string) ([]processor.Intent, processor.ReadResult) {
	return nil, answered
}

func fakeCharge(i int, withRef bool) reconcile.Charge {
	id := fmt.Sprintf("ch_rate%d", i)
	sent := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	c := reconcile.Charge{ID: id, Amount: 1999, Currency: "usd", Customer: "cus_test1", PaymentMethod: "pm_card_visa",
		Account: simAccount, CreatedAt: sent, FirstSentAt: sent, Written: true}
	if withRef {
		c.ProcessorRef = "pi_" + id
	}
	return c
}

// TestReconcileRate checks that reconciliation keeps to its configured processor rates, the
// read rate and the search rate apart, on a fake clock.
func TestReconcileRate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		read        *rate.Limiter
		search      *rate.Limiter
		charges     int
		withRef     bool
		wantElapsed time.Duration
	}{
		// The retrieve path: one read per charge, 10/s: 20 charges take 1.9 s after the burst.
		{"retrieve at the read rate", rate.NewLimiter(10, 1), rate.NewLimiter(rate.Every(time.Hour), 1), 20, true, 1900 * time.Millisecond},
		// Unknown ids: a list page then a search per charge; the search rate (2/s) governs.
		{"search at the search rate", rate.NewLimiter(rate.Inf, 1), rate.NewLimiter(2, 1), 5, false, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				store := newMemStore()
				now := func() time.Time { return time.Date(2031, 1, 1, 0, 1, 0, 0, time.UTC) }
				r, err := reconcile.New(reconcile.Config{Account: simAccount, Reads: fakeReads{}, Store: store, Now: now,
					ReadLimiter: tc.read, SearchLimiter: tc.search})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				for i := range tc.charges {
					if _, err := r.Reconcile(t.Context(), fakeCharge(i, tc.withRef)); err != nil {
						t.Fatalf("charge %d: %v", i, err)
					}
				}
				if got := time.Since(start); got != tc.wantElapsed {
					t.Fatalf("elapsed: got %s, want %s", got, tc.wantElapsed)
				}
			})
		})
	}
}

// TestReconcileLimiterRefuses checks that a check that cannot get its turn within the
// context's deadline returns an error and records nothing.
func TestReconcileLimiterRefuses(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := newMemStore()
		r, err := reconcile.New(reconcile.Config{Account: simAccount, Reads: fakeReads{}, Store: store,
			ReadLimiter: rate.NewLimiter(rate.Every(time.Hour), 1), SearchLimiter: rate.NewLimiter(rate.Inf, 1)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Reconcile(t.Context(), fakeCharge(1, true)); err != nil {
			t.Fatalf("first: %v", err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := r.Reconcile(ctx, fakeCharge(2, true)); err == nil {
			t.Fatal("second: got no error, want the limiter's refusal")
		}
		if n := len(store.checksOf("ch_rate2")); n != 0 {
			t.Fatalf("checks recorded: got %d, want 0", n)
		}
	})
}
