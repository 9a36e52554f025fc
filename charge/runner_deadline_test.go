package charge

import (
	"context"
	"testing"
	"time"

	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/retry"
)

// scriptedProcessor answers each attempt with the next outcome of its script.
type scriptedProcessor struct{ script []retry.Outcome }

func (p *scriptedProcessor) CreatePayment(context.Context, processor.PaymentParams) processor.Attempt {
	out := p.script[0]
	p.script = p.script[1:]
	a := processor.Attempt{Outcome: out}
	if out.Class == retry.ClassSuccess {
		a.PaymentIntent, a.Status = "pi_1", "succeeded"
	}
	return a
}

// TestRunnerUsesTheCallersDeadline: the caller's deadline (Request-Timeout-Ms, up to 60 s) is
// the run's, even past the policy's default deadline: a Retry-After that fits the caller's
// deadline is waited out, not answered deadline_exceeded at once.
func TestRunnerUsesTheCallersDeadline(t *testing.T) {
	t.Parallel()
	policy := retry.DefaultPolicy()
	policy.Deadline = 500 * time.Millisecond // the default the caller's deadline overrides
	proc := &scriptedProcessor{script: []retry.Outcome{
		{Class: retry.ClassRetryAfter, HTTPStatus: 429, RetryAfter: "1"},
		{Class: retry.ClassSuccess, HTTPStatus: 200},
	}}
	r := NewRunner(RunnerConfig{Processor: proc, Account: "acct_1", Policy: policy})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	out := r.Run(ctx, &Charge{ID: "ch_1", MerchantID: "m", Amount: 100, Currency: "usd", PaymentMethod: "pm_card_visa",
		ProcessorKey: ProcessorKey("ch_1")})
	if out.Status != StatusSucceeded || len(out.Attempts) != 2 {
		t.Fatalf("run: %s %+v after %d attempts, want succeeded after waiting out the Retry-After", out.Status, out.Failure, len(out.Attempts))
	}
}
