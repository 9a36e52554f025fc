package reconcile_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/jobs"
	"github.com/paygate/paygate/reconcile"
)

// resolveStore is a JanitorStore whose one charge stands as standing when an operator
// resolves it; it keeps the plan decided.
type resolveStore struct {
	reconcile.JanitorStore // the methods a resolution does not call
	standing               reconcile.ManualStanding
	plan                   reconcile.ManualPlan
}

func (s *resolveStore) ResolveManually(_ context.Context, _, _ string, _ bool,
	plan func(reconcile.ManualStanding) (reconcile.ManualPlan, error)) (*charge.Charge, error) {
	p, err := plan(s.standing)
	s.plan = p
	return s.standing.Charge, err
}

// TestJanitorResolvesUnderItsCaps: an operator's decline is judged under the network caps the
// janitor was configured with, as every other decline's verdict is.
func TestJanitorResolvesUnderItsCaps(t *testing.T) {
	t.Parallel()
	remaining := func(t *testing.T, caps decline.Caps) int {
		t.Helper()
		now := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
		checked := now.Add(-time.Minute)
		st := &resolveStore{standing: reconcile.ManualStanding{Now: now, LastCheckAt: &checked, LastInconclusiveAt: &checked,
			Charge: &charge.Charge{ID: "ch_caps", Status: charge.StatusPending, CreatedAt: now.Add(-time.Hour), Chain: "ch_caps",
				Card: &charge.Card{Fingerprint: "fp_caps", Network: "visa", ExpMonth: 12, ExpYear: 2040}}}}
		j, err := reconcile.NewJanitor(reconcile.JanitorConfig{Store: st,
			Reconciler: reconcile.Config{Account: "acct_1", Reads: fakeReads{}, Caps: caps}}, jobs.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := j.Resolve(context.Background(), reconcile.ManualResolution{MerchantID: "m", ChargeID: "ch_caps",
			Outcome: charge.StatusDeclined, Note: "issuer confirmed", Actor: "operator:key_1", Within: 10 * time.Minute}); err != nil {
			t.Fatalf("resolve: %v", err)
		}
		var blk charge.DeclineJSON
		if err := json.Unmarshal(st.plan.Resolution.Decline, &blk); err != nil || blk.Reattempt.RemainingInWindow == nil {
			t.Fatalf("decline block %s: %v, want one with the reattempts remaining", st.plan.Resolution.Decline, err)
		}
		if blk.Code != charge.CodeDeclinedByOperator {
			t.Fatalf("decline code: got %q, want %q", blk.Code, charge.CodeDeclinedByOperator)
		}
		return *blk.Reattempt.RemainingInWindow
	}
	if got, def := remaining(t, decline.Caps{VisaReattempts30d: 20}), remaining(t, decline.Caps{}); got != def+5 {
		t.Fatalf("reattempts remaining under a Visa cap of 20: got %d, want the default cap's (%d) plus 5", got, def)
	}
}
