package reconcile

import (
	"context"
	"fmt"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/retry"
)

// Writer makes one attempt under a charge's processor key (a *processor.Client).
type Writer interface {
	CreatePayment(ctx context.Context, p processor.PaymentParams) processor.Attempt
}

// replayer sends a pending charge's request again under its own key, with the very
// parameters of its attempts (charge.PaymentParamsOf): the processor answers the stored
// result of an execution it holds. CanReplay decides when it may: inside the 24 h rule, for a
// key the processor may have seen.
type replayer struct {
	store  JanitorStore
	writer Writer
}

func (r replayer) Replay(ctx context.Context, chargeID string) processor.Attempt {
	t, err := r.store.ReconcileTarget(ctx, chargeID)
	if err != nil {
		return processor.Attempt{Outcome: retry.Outcome{Class: retry.ClassNotSent}, Err: fmt.Errorf("reconcile: replay: %w", err)}
	}
	c, err := r.store.Charge(ctx, t.MerchantID, chargeID)
	if err != nil {
		return processor.Attempt{Outcome: retry.Outcome{Class: retry.ClassNotSent}, Err: fmt.Errorf("reconcile: replay: %w", err)}
	}
	return r.writer.CreatePayment(ctx, charge.PaymentParamsOf(c))
}
