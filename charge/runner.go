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

// Accounts tells which processor account the gateway talks to (a *processor.AccountWatch).
// The processor behind the configured API base may change account while paygate runs.
type Accounts interface {
	// Current returns the account: the last one read, or a new read's when a failed
	// connection put it in doubt. It returns an error when that read fails.
	Current(ctx context.Context) (string, error)
	// Confirm returns the account as the processor states it now: a new read unless one
	// succeeded within a few seconds. It returns an error when the read fails.
	Confirm(ctx context.Context) (string, error)
	// Refresh reads the account now, whatever was read before.
	Refresh(ctx context.Context) (string, error)
	// Last returns the account last read, without reading.
	Last() string
}

// RunnerConfig configures a Runner.
type RunnerConfig struct {
	Processor Processor
	// Accounts tells the processor account the Processor talks to now. Nil: Account, fixed.
	Accounts Accounts
	// Account is the processor account id of a runner without Accounts.
	Account  string
	Policy   retry.Policy
	Guards   Guards
	Observer Observer
	Log      *zap.Logger
	// Now is the clock a run's deadline is measured on (time.Now when nil); the retry
	// loop's own waits run on the runtime's timers (retry.Do).
	Now func() time.Time
}

// fixedAccount is the Accounts of a runner configured with one account id.
type fixedAccount string

func (a fixedAccount) Current(context.Context) (string, error) { return string(a), nil }
func (a fixedAccount) Confirm(context.Context) (string, error) { return string(a), nil }
func (a fixedAccount) Refresh(context.Context) (string, error) { return string(a), nil }
func (a fixedAccount) Last() string                            { return string(a) }

// Observer is told of every finished run, for metrics.
type Observer interface {
	Observe(merchantID string, rep retry.Report)
}

// LoopRunner carries a charge to the processor through the retry loop. It sends nothing for
// a charge whose processor account is not the one the processor states: before every attempt
// it compares the charge's account with Accounts.Current, which reads the account again
// whenever a failed connection put it in doubt, and sends nothing while that read fails.
type LoopRunner struct {
	cfg      RunnerConfig
	accounts Accounts
}

var (
	_ Runner           = (*LoopRunner)(nil)
	_ AccountConfirmer = (*LoopRunner)(nil)
)

// NewRunner returns the retry-loop runner.
func NewRunner(cfg RunnerConfig) *LoopRunner {
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	accounts := cfg.Accounts
	if accounts == nil {
		accounts = fixedAccount(cfg.Account)
	}
	return &LoopRunner{cfg: cfg, accounts: accounts}
}

// Account implements Runner: the account last read, without reading.
func (r *LoopRunner) Account() string { return r.accounts.Last() }

// CurrentAccount implements AccountConfirmer: Accounts.Current, or the last account known
// when it cannot be read (Run then sends nothing until it can).
func (r *LoopRunner) CurrentAccount(ctx context.Context) string {
	if id, err := r.accounts.Current(ctx); err == nil {
		return id
	}
	return r.accounts.Last()
}

// accountConfirmWait bounds the confirmation of a charge's account before a retry or a
// resumed run, so that the charge keeps most of the caller's deadline.
const accountConfirmWait = 2 * time.Second

// AccountMoved implements AccountConfirmer with Accounts.Confirm, waiting at most
// accountConfirmWait. When the account cannot be confirmed it reports false, and Run sends
// nothing until it can: Accounts stays in doubt after a read that failed or was not waited
// for.
func (r *LoopRunner) AccountMoved(ctx context.Context, account string) bool {
	ctx, cancel := context.WithTimeout(ctx, accountConfirmWait)
	defer cancel()
	id, err := r.accounts.Confirm(ctx)
	if err != nil {
		r.cfg.Log.Warn("the processor account cannot be confirmed: nothing is sent for the charge until it is",
			zap.String("processor_account", account), zap.Error(err))
		return false
	}
	return id != account
}

// reachedAccount returns, after a run whose request may have executed over a newly dialed
// connection, the processor's account when it is another than account, the one the charge
// was recorded at: the process behind the processor's address changed (restarted as
// another account) between the account's last read and the send, with no request failing
// to tell. Empty when it is the same, or cannot be read within accountConfirmWait. The
// caller records the charge at the returned account only when this run made its first sends.
func (r *LoopRunner) reachedAccount(ctx context.Context, account string) string {
	// The run's deadline may have passed (a run that waited its whole deadline): the read
	// takes a little of the margin the caller's answer keeps, never more.
	until := r.cfg.Now().Add(accountConfirmWait)
	if d, ok := ctx.Deadline(); ok {
		until = minTime(until, d.Add(reachedAccountGrace))
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), until)
	defer cancel()
	// Read now: a read of a moment ago may have reached the process the new connection
	// replaced.
	id, err := r.accounts.Refresh(ctx)
	if err != nil || id == account {
		return ""
	}
	return id
}

// reachedAccountGrace is how far past the run's deadline reachedAccount may read: a part of
// the margin the engine keeps to store and send the answer.
const reachedAccountGrace = 50 * time.Millisecond

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// codeAccountUnconfirmed is the processor_code of an attempt not sent because the processor
// account could not be read.
const codeAccountUnconfirmed = "processor_account_unconfirmed"

// checkAccount decides, before an attempt of c, whether it may be sent: only to the account
// the charge was recorded at (a charge recorded without one predates the record). It returns
// the outcome of an attempt it stops: not sent while the account cannot be read (a later
// attempt may), terminal when the processor is another account.
func (r *LoopRunner) checkAccount(ctx context.Context, c *Charge) (retry.Outcome, bool) {
	if c.ProcessorAccount == "" {
		return retry.Outcome{}, true
	}
	id, err := r.accounts.Current(ctx)
	switch {
	case err != nil:
		return retry.Outcome{Class: retry.ClassNotSent, ProcessorCode: codeAccountUnconfirmed}, false
	case id != c.ProcessorAccount:
		return retry.Outcome{Class: retry.ClassTerminal, ProcessorCode: CodeAccountChanged}, false
	}
	return retry.Outcome{}, true
}

// Run implements Runner: every attempt carries the charge's processor key, the loop runs
// under the deadline of ctx, and the result is precise (see package retry).
func (r *LoopRunner) Run(ctx context.Context, c *Charge) Outcome {
	params := PaymentParamsOf(c)
	// The fields are encoded only if something is logged: most runs log nothing.
	log := r.cfg.Log.WithLazy(zap.String("charge_id", c.ID), zap.String("merchant_id", c.MerchantID))
	op := retry.Operation{IdempotencyKey: c.ProcessorKey, Logger: log}
	account := c.ProcessorAccount
	if account == "" {
		account = r.accounts.Last()
	}
	if r.cfg.Guards != nil {
		op.Budget = r.cfg.Guards.Budget(account, c.MerchantID)
		op.Breaker = r.cfg.Guards.Breaker(account)
	}
	var (
		requestIDs []string
		piID       string
		decline    *processor.Decline
		piStatus   string
		unsent     []int // attempts the account check stopped before sending
		moved      bool  // the processor is another account than the charge's
		fresh      bool  // a request that may have executed went over a newly dialed connection
	)
	// The caller's deadline is the run's (Request-Timeout-Ms, up to 60 s): the policy's
	// deadline is only the default of a run without one.
	policy := r.cfg.Policy
	if d, ok := ctx.Deadline(); ok {
		policy.Deadline = max(policy.Deadline, d.Sub(r.cfg.Now()))
	}
	rep, err := retry.Do(ctx, policy, op, func(ctx context.Context, a retry.Attempt) retry.Outcome {
		if out, ok := r.checkAccount(ctx, c); !ok {
			requestIDs = append(requestIDs, "")
			unsent = append(unsent, a.N)
			moved = out.Class == retry.ClassTerminal
			if moved {
				log.Warn("charge not sent: the processor is another account than the charge's",
					zap.String("processor_account", c.ProcessorAccount), zap.String("current_account", r.accounts.Last()))
			}
			return out
		}
		at := r.cfg.Processor.CreatePayment(ctx, params)
		fresh = fresh || (at.FreshConn && at.Writes > 0)
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
	if fresh && c.ProcessorAccount != "" && c.Attempts == 0 {
		out.Account = r.reachedAccount(ctx, c.ProcessorAccount)
	}
	for _, n := range unsent {
		// Nothing left for the processor: the row says so whatever stopped the loop.
		out.Attempts[n-1].Class = string(retry.ClassNotSent)
	}
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
		switch {
		case rep.Stop == retry.StopTerminal && moved:
			// The charge's account is not the processor's now: nothing more is sent under
			// its key (an earlier attempt that may have executed made the run pending).
			code, retryable = CodeAccountChanged, false
		case rep.Stop == retry.StopTerminal && piStatus == "canceled":
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
