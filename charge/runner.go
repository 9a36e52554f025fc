package charge

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/retry"
)

// Processor makes one classified attempt at the processor.
type Processor interface {
	CreatePayment(ctx context.Context, p processor.PaymentParams) processor.Attempt
}

// Guards are the process-wide retry budget and breakers the runner spends and consults.
type Guards interface {
	Budget(account, merchant string) retry.Budget
	Breaker(account string) retry.Breaker
}

// RunnerConfig configures a Runner.
type RunnerConfig struct {
	Processor Processor
	Account   string // the processor account id
	Policy    retry.Policy
	Guards    Guards
	Observer  Observer
	Log       *zap.Logger
}

// Observer is told of every finished run, for metrics.
type Observer interface {
	Observe(merchantID string, rep retry.Report)
}

// LoopRunner carries a charge to the processor through the retry loop.
type LoopRunner struct {
	cfg RunnerConfig
}

var _ Runner = (*LoopRunner)(nil)

// NewRunner returns the retry-loop runner.
func NewRunner(cfg RunnerConfig) *LoopRunner {
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	return &LoopRunner{cfg: cfg}
}

// Account implements Runner.
func (r *LoopRunner) Account() string { return r.cfg.Account }

// Run implements Runner: every attempt carries the charge's processor key, the loop runs
// under the deadline of ctx, and the result is precise (see package retry).
func (r *LoopRunner) Run(ctx context.Context, c *Charge) Outcome {
	params := PaymentParamsOf(c)
	log := r.cfg.Log.With(zap.String("charge_id", c.ID), zap.String("merchant_id", c.MerchantID))
	op := retry.Operation{IdempotencyKey: c.ProcessorKey, Logger: log}
	if r.cfg.Guards != nil {
		op.Budget = r.cfg.Guards.Budget(r.cfg.Account, c.MerchantID)
		op.Breaker = r.cfg.Guards.Breaker(r.cfg.Account)
	}
	var (
		requestIDs []string
		piID       string
		decline    *processor.Decline
		piStatus   string
	)
	// The caller's deadline is the run's (Request-Timeout-Ms, up to 60 s): the policy's
	// deadline is only the default of a run without one.
	policy := r.cfg.Policy
	if d, ok := ctx.Deadline(); ok {
		policy.Deadline = max(policy.Deadline, time.Until(d))
	}
	rep, err := retry.Do(ctx, policy, op, func(ctx context.Context, a retry.Attempt) retry.Outcome {
		at := r.cfg.Processor.CreatePayment(ctx, params)
		requestIDs = append(requestIDs, at.RequestID)
		if at.PaymentIntent != "" {
			piID = at.PaymentIntent
		}
		if at.Decline != nil {
			decline = at.Decline
		}
		piStatus = at.Status
		if at.Err != nil && at.Outcome.Class != retry.ClassDecline {
			log.Debug("processor attempt failed", zap.Int("attempt", a.N), zap.String("class", string(at.Outcome.Class)),
				zap.Int("writes", at.Writes), zap.Error(at.Err))
		}
		if at.Outcome.ProcessorCode == "idempotency_error" {
			log.Error("processor refused our idempotency key: the same key was sent with other parameters",
				zap.String("processor_key", c.ProcessorKey))
		}
		return at.Outcome
	})
	if err != nil {
		// An invalid policy is a configuration bug caught at start; nothing was sent.
		log.Error("retry policy invalid", zap.Error(err))
		return Outcome{Status: StatusFailed, Failure: &Failure{Code: "internal_error", Retryable: true}}
	}
	if r.cfg.Observer != nil {
		r.cfg.Observer.Observe(c.MerchantID, rep)
	}
	out := Outcome{ProcessorRef: piID, ProcessorStatus: piStatus, Attempts: attemptsOf(rep, requestIDs)}
	switch rep.Result.Status {
	case retry.StatusSucceeded:
		out.Status = StatusSucceeded
	case retry.StatusDeclined:
		out.Status = StatusDeclined
		out.Evidence = decline
		if out.Evidence == nil {
			out.Evidence = &processor.Decline{}
		}
	case retry.StatusPending:
		out.Status = StatusPending
	default:
		out.Status = StatusFailed
		code, retryable := string(rep.Result.Code), rep.Result.Retryable
		if rep.Stop == retry.StopTerminal && piStatus == "canceled" {
			code, retryable = "payment_intent_canceled", false
		}
		out.Failure = &Failure{Code: code, Retryable: retryable}
		if retryable {
			out.RetryAfter = retryAfterHint(rep, op.Breaker)
		}
	}
	return out
}

// openUntil is a breaker that can tell when it admits attempts again (a *retry.Circuit).
type openUntil interface {
	OpenUntil(now time.Time) time.Time
}

// retryAfterHint returns how long a retry of a failed run should wait for the processor to
// take one again: what remains, at the run's end, of the Retry-After of its last answer, or
// of the pause of its open circuit; the longer of the two.
func retryAfterHint(rep retry.Report, b retry.Breaker) time.Duration {
	var wait time.Duration
	if n := len(rep.Attempts); n > 0 {
		if a := rep.Attempts[n-1]; a.HasRetryAfter {
			wait = a.StartedAt.Add(a.Duration).Add(a.RetryAfter).Sub(rep.End)
		}
	}
	if o, ok := b.(openUntil); ok && rep.Stop == retry.StopCircuitOpen {
		if until := o.OpenUntil(rep.End); !until.IsZero() {
			wait = max(wait, until.Sub(rep.End))
		}
	}
	return max(wait, 0)
}

// PaymentParamsOf returns what the processor is asked for a charge. Every attempt and every
// replay of the charge's key is built by it, so the request body is the same byte for byte.
func PaymentParamsOf(c *Charge) processor.PaymentParams {
	root := ""
	if c.Chain != "" && c.Chain != c.ID {
		root = c.Chain
	}
	return processor.PaymentParams{
		Key:           c.ProcessorKey,
		ChargeID:      c.ID,
		RootChargeID:  root,
		Amount:        c.Amount,
		Currency:      c.Currency,
		PaymentMethod: c.PaymentMethod,
		Customer:      c.Customer,
		OffSession:    c.Initiator == InitiatorMerchant,
	}
}

func attemptsOf(rep retry.Report, requestIDs []string) []Attempt {
	out := make([]Attempt, 0, len(rep.Attempts))
	for i, a := range rep.Attempts {
		at := Attempt{
			N:                  a.N,
			StartedAt:          a.StartedAt,
			DurationMS:         a.Duration.Milliseconds(),
			TimeoutMS:          a.Timeout.Milliseconds(),
			Class:              string(a.Class),
			HTTPStatus:         a.HTTPStatus,
			ProcessorCode:      a.ProcessorCode,
			BackoffMS:          a.Backoff.Milliseconds(),
			BudgetTokensBefore: a.TokensBefore,
			BudgetTokensAfter:  a.TokensAfter,
		}
		if a.HasRetryAfter {
			at.RetryAfterMS = a.RetryAfter.Milliseconds()
		}
		if i < len(requestIDs) {
			at.RequestID = requestIDs[i]
		}
		out = append(out, at)
	}
	return out
}

// KeyWriteWindow is how long after a key's first use a write under it is allowed: the
// processor keeps keys 24 h, and an hour of margin covers clock skew and long runs.
const KeyWriteWindow = 23 * time.Hour
