package retry

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"go.uber.org/zap"
)

// Operation describes one logical operation and the shared guards it runs
// under.
type Operation struct {
	// IdempotencyKey is the processor idempotency key every attempt carries;
	// it makes a write replay-safe. Empty for none.
	IdempotencyKey string

	// Idempotent reports that repeating the request has no further effect
	// (a read), so it is replay-safe without a key. A read has no effect to
	// be uncertain about: classify its timeouts as ClassRetry, not
	// ClassOutcomeUnknown, or a run that then stops reports pending.
	Idempotent bool

	// Deadline is an absolute deadline earlier than the policy's, if any:
	// the caller's own deadline, or the end of the window in which writes
	// under the key are still allowed.
	Deadline time.Time

	// Budget is the retry budget of the operation's scope; nil admits every
	// retry.
	Budget Budget

	// Breaker guards the processor account; nil admits every attempt.
	Breaker Breaker

	// Rand is the jitter source; nil uses the goroutine-safe global source.
	// A *rand.Rand is not safe for concurrent use: give each goroutine its
	// own, or share one only in a single-threaded simulation.
	Rand *rand.Rand

	// Logger receives Do's retry decisions; nil logs nothing. The core
	// (Run) never logs: its Report carries the same facts.
	Logger *zap.Logger
}

// replaySafe reports whether the operation may be repeated after an attempt
// that may have executed.
func (o Operation) replaySafe() bool {
	return o.IdempotencyKey != "" || o.Idempotent
}

// Attempt is what the caller needs to perform one attempt.
type Attempt struct {
	// N is the attempt's number, from 1.
	N int
	// IdempotencyKey is the operation's key, the same for every attempt.
	IdempotencyKey string
	// Timeout is the attempt's timeout: min(Policy.AttemptTimeout,
	// remaining − Policy.AnswerMargin).
	Timeout time.Duration
	// Deadline is the attempt's absolute deadline: its start plus Timeout.
	Deadline time.Time
}

// Decision is the loop's decision after an attempt.
type Decision struct {
	// Retry reports that another attempt is due after Wait; call Begin then.
	Retry bool
	// Wait is the delay before the next attempt.
	Wait time.Duration
	// Stop is why the loop stopped, when Retry is false.
	Stop StopReason
	// Result is the final result, when Retry is false.
	Result Result
}

// Run is the step-wise decision core of the retry loop for one logical
// operation. It never sleeps, starts no goroutine and reads no clock: every
// method takes the current time, so the same code runs under Do in
// production and on a simulator's fake clock.
//
// The caller alternates Begin, the attempt, and Next, waiting Decision.Wait
// between a Next and the following Begin:
//
//	for {
//		a, ok := run.Begin(now)
//		if !ok {
//			break // stopped before sending: deadline or breaker
//		}
//		out := perform(a)          // at most a.Timeout later
//		d := run.Next(now, out)    // now: when the attempt ended
//		if !d.Retry {
//			break
//		}
//		// now += d.Wait
//	}
//	report := run.Report()
//
// A Run is not safe for concurrent use. Calling Next without a pending
// Begin, or Begin while an attempt is pending, panics: both are bugs in the
// caller that would corrupt the budget and breaker accounting.
type Run struct {
	policy   Policy
	backoff  Backoff
	op       Operation
	report   Report
	inFlight bool   // Begin returned an attempt that Next has not closed
	ticket   Ticket // the breaker's ticket for the attempt in flight
	admitted bool   // the breaker admitted the attempt in flight
	stopped  bool
}

// NewRun starts the run of one operation at now. Its deadline is now plus
// Policy.Deadline, or Operation.Deadline when that is earlier. It returns a
// *ConfigError for an invalid policy.
func NewRun(now time.Time, p Policy, op Operation) (*Run, error) {
	r := &Run{}
	if err := r.start(now, p, op); err != nil {
		return nil, err
	}
	return r, nil
}

// start makes r the run of one operation started at now, as NewRun does, in place: Do keeps
// its run on its own stack.
func (r *Run) start(now time.Time, p Policy, op Operation) error {
	if err := p.Validate(); err != nil {
		return err
	}
	deadline := now.Add(p.Deadline)
	if !op.Deadline.IsZero() && op.Deadline.Before(deadline) {
		deadline = op.Deadline
	}
	*r = Run{
		policy:  p,
		backoff: p.Backoff(),
		op:      op,
		report: Report{
			IdempotencyKey: op.IdempotencyKey,
			Start:          now,
			Deadline:       deadline,
			// Most operations take one attempt: room for more is made when
			// a retry needs it.
			Attempts: make([]AttemptRecord, 0, 1),
		},
	}
	return nil
}

// Begin starts the next attempt at now and returns it, or returns false when
// the loop has stopped: already, or now because the deadline leaves no
// useful attempt (StopDeadline) or the breaker refuses (StopCircuitOpen).
// Report then tells the result.
func (r *Run) Begin(now time.Time) (Attempt, bool) {
	if r.stopped {
		return Attempt{}, false
	}
	if r.inFlight {
		panic("retry: Begin called while an attempt is pending")
	}
	remaining := r.report.Deadline.Sub(now)
	timeout := min(r.policy.AttemptTimeout, subSat(remaining, r.policy.AnswerMargin))
	if timeout < r.minAttempt() {
		r.stop(now, StopDeadline)
		return Attempt{}, false
	}
	r.admitted = false
	if r.op.Breaker != nil {
		t, ok := r.op.Breaker.Allow(now)
		if !ok {
			r.stop(now, StopCircuitOpen)
			return Attempt{}, false
		}
		r.ticket, r.admitted = t, true
	}
	n := len(r.report.Attempts) + 1
	r.report.Attempts = append(r.report.Attempts, AttemptRecord{
		N:         n,
		StartedAt: now,
		Timeout:   timeout,
		Remaining: remaining,
	})
	r.inFlight = true
	return Attempt{
		N:              n,
		IdempotencyKey: r.op.IdempotencyKey,
		Timeout:        timeout,
		Deadline:       now.Add(timeout),
	}, true
}

// Next closes the pending attempt with its outcome, observed at now, and
// decides: stop with a result, or retry after a wait. Before a retry it
// checks, in order, that the failure is temporary, that the operation is
// replay-safe if the attempt may have executed, that the attempt limit is not
// reached, that the deadline fits the earliest useful time plus the answer
// margin and a minimum useful attempt, that the processor's Retry-After is
// within the policy's cap, and that the budget admits one more attempt (the
// last check spends a token).
func (r *Run) Next(now time.Time, out Outcome) Decision {
	if !r.inFlight {
		panic("retry: Next called without a pending attempt")
	}
	r.inFlight = false
	rec := &r.report.Attempts[len(r.report.Attempts)-1]

	class := out.Class
	if !class.Valid() {
		class = ClassUnknownFinal
	}
	maybe := out.maybeExecuted()
	canceled := out.Canceled && class.Temporary()
	rec.Duration = max(now.Sub(rec.StartedAt), 0)
	rec.Class = class
	rec.HTTPStatus = out.HTTPStatus
	rec.ProcessorCode = out.ProcessorCode
	rec.MaybeExecuted = maybe
	if maybe {
		r.report.Uncertain = true // sticky: only a settling answer clears the doubt
	}

	health := healthOf(class, out.HTTPStatus)
	if canceled {
		health = HealthNeutral // the caller's cancellation says nothing of the processor
	}
	if r.admitted {
		r.op.Breaker.Done(now, r.ticket, health)
		r.admitted = false
	}
	if r.op.Budget != nil {
		if health == HealthOK {
			r.op.Budget.Deposit(now)
		}
		rec.TokensBefore = r.op.Budget.Tokens(now)
		rec.TokensAfter = rec.TokensBefore
	}
	if out.RetryAfter != "" {
		rec.RetryAfterHeader = clip(out.RetryAfter)
		if d, err := ParseRetryAfter(out.RetryAfter, out.Date, now, r.policy.MaxClockSkew); err == nil {
			rec.RetryAfter, rec.HasRetryAfter = d, true
		}
	}

	// 1. Is the failure temporary?
	switch class {
	case ClassSuccess:
		return r.stop(now, StopSucceeded)
	case ClassDecline:
		return r.stop(now, StopDeclined)
	case ClassStoredResult:
		return r.stop(now, StopStoredResult)
	case ClassUnknownFinal:
		return r.stop(now, StopUnknownFinal)
	case ClassTerminal:
		return r.stop(now, StopTerminal)
	}
	if canceled {
		return r.stop(now, r.cancelReason(now))
	}
	// 2. Is the operation replay-safe?
	if maybe && !r.op.replaySafe() {
		return r.stop(now, StopNotReplaySafe)
	}
	n := len(r.report.Attempts)
	if n >= r.policy.MaxAttempts {
		return r.stop(now, StopMaxAttempts) // no sleep after the last allowed attempt
	}
	// 3. When is the earliest useful time?
	rec.BackoffCap = r.backoff.Ceiling(n - 1)
	rec.Backoff = jitter(rec.BackoffCap, r.op.Rand)
	rec.Delay = rec.Backoff
	if rec.HasRetryAfter {
		rec.Delay = max(rec.Delay, rec.RetryAfter) // never below the processor's wait
	}
	if class == ClassBusy {
		rec.Delay = max(rec.Delay, r.policy.BusyWait)
	}
	// 4. Does the deadline fit that wait plus a useful attempt?
	need := addSat(addSat(rec.Delay, r.policy.AnswerMargin), r.minAttempt())
	if need > r.report.Deadline.Sub(now) {
		return r.stop(now, StopDeadline)
	}
	if rec.HasRetryAfter && rec.RetryAfter > r.policy.RetryAfterCap {
		return r.stop(now, StopRetryAfterTooLong)
	}
	// 5. Does the budget admit it?
	if r.op.Budget != nil {
		g := r.op.Budget.Withdraw(now)
		rec.TokensBefore, rec.TokensAfter = g.Before, g.After
		if !g.Admitted {
			return r.stop(now, StopBudget)
		}
	}
	return Decision{Retry: true, Wait: rec.Delay}
}

// Cancel stops the run at now because the operation's context ended: with
// StopCanceled, or StopDeadline when now is past the deadline. The result is
// pending if an attempt may have executed. An attempt still pending is closed
// as possibly executed; a caller that knows it was never sent should call
// Next with ClassNotSent and Outcome.Canceled instead. Cancel on a stopped
// run only returns its decision.
func (r *Run) Cancel(now time.Time) Decision {
	if r.stopped {
		return Decision{Stop: r.report.Stop, Result: r.report.Result}
	}
	if r.inFlight {
		return r.Next(now, Outcome{Class: ClassOutcomeUnknown, Canceled: true})
	}
	return r.stop(now, r.cancelReason(now))
}

// Done reports whether the loop has stopped.
func (r *Run) Done() bool { return r.stopped }

// Deadline returns the run's absolute deadline.
func (r *Run) Deadline() time.Time { return r.report.Deadline }

// Report returns a copy of the report so far; once Done, the final one.
func (r *Run) Report() Report {
	rep := r.report
	rep.Attempts = slices.Clone(rep.Attempts)
	return rep
}

func (r *Run) stop(now time.Time, reason StopReason) Decision {
	r.stopped = true
	r.report.Stop = reason
	r.report.Result = reason.result(r.report.Uncertain)
	r.report.End = now
	return Decision{Stop: reason, Result: r.report.Result}
}

func (r *Run) cancelReason(now time.Time) StopReason {
	if now.Before(r.report.Deadline) {
		return StopCanceled
	}
	return StopDeadline
}

// minAttempt is the shortest useful attempt timeout: at least 1 ns, so a
// zero Policy.MinAttempt never admits an attempt without time.
func (r *Run) minAttempt() time.Duration {
	return max(r.policy.MinAttempt, 1)
}

// addSat adds two non-negative durations, saturating instead of
// overflowing.
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// subSat returns a − b for a non-negative b, saturating instead of
// overflowing.
func subSat(a, b time.Duration) time.Duration {
	if a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}
