package retry

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// nopLogger stands in for a nil Operation.Logger.
var nopLogger = zap.NewNop()

// AttemptFunc performs one attempt and classifies its outcome. It must
// return by ctx's deadline (the attempt's timeout) and carry a.IdempotencyKey
// on the request. Classification is the caller's: this package knows nothing
// of the processor's status codes.
type AttemptFunc func(ctx context.Context, a Attempt) Outcome

// Do runs the retry loop for one operation in real time: it calls attempt
// with a per-attempt context deadline, and sleeps between attempts on timers
// that end at once when ctx ends. The decisions are Run's.
//
// The operation's deadline is the earliest of start plus Policy.Deadline,
// op.Deadline and ctx's deadline. When ctx ends, no further attempt starts;
// the attempt in flight is told through its context and reported with
// Outcome.Canceled set, so it never counts as a processor failure. An
// operation that must finish once sent, whatever the caller does, should run
// under context.WithoutCancel plus its own deadline.
//
// Do reads the runtime clock and timers, which testing/synctest replaces in
// tests; a simulator on its own fake clock drives Run directly instead. The
// returned error is a *ConfigError for an invalid policy; the operation's own
// outcome, failure included, is in the Report.
func Do(ctx context.Context, p Policy, op Operation, attempt AttemptFunc) (Report, error) {
	if d, ok := ctx.Deadline(); ok && (op.Deadline.IsZero() || d.Before(op.Deadline)) {
		op.Deadline = d
	}
	var run Run
	if err := run.start(time.Now(), p, op); err != nil {
		return Report{}, err
	}
	log := op.Logger
	if log == nil {
		log = nopLogger
	}
	for {
		if ctx.Err() != nil {
			run.Cancel(time.Now())
			break
		}
		a, ok := run.Begin(time.Now())
		if !ok {
			break
		}
		out := perform(ctx, a, attempt)
		if ctx.Err() != nil {
			out.Canceled = true
		}
		d := run.Next(time.Now(), out)
		if !d.Retry {
			break
		}
		logRetry(log, run.report.Attempts[a.N-1])
		if !sleep(ctx, d.Wait) {
			run.Cancel(time.Now())
			break
		}
	}
	// The run ends here: its report is the caller's, without the copy Report makes.
	rep := run.report
	logStop(log, rep)
	return rep, nil
}

// perform calls attempt under the attempt's deadline.
func perform(ctx context.Context, a Attempt, attempt AttemptFunc) Outcome {
	ctx, cancel := context.WithDeadline(ctx, a.Deadline)
	defer cancel()
	return attempt(ctx, a)
}

// sleep waits d, or less if ctx ends first; it reports whether ctx is still
// live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// logRetry logs one decision to retry, with the facts that justify it.
func logRetry(log *zap.Logger, rec AttemptRecord) {
	fields := []zap.Field{
		zap.Int("attempt", rec.N),
		zap.String("class", string(rec.Class)),
		zap.Int("http_status", rec.HTTPStatus),
		zap.Int64("backoff_cap_ms", rec.BackoffCap.Milliseconds()),
		zap.Int64("backoff_ms", rec.Backoff.Milliseconds()),
		zap.Int64("delay_ms", rec.Delay.Milliseconds()),
		zap.Float64("budget_tokens", roundTokens(rec.TokensAfter)),
		zap.Int64("remaining_ms", (rec.Remaining - rec.Duration).Milliseconds()),
	}
	if rec.ProcessorCode != "" {
		fields = append(fields, zap.String("processor_code", rec.ProcessorCode))
	}
	if rec.HasRetryAfter {
		fields = append(fields, zap.Int64("retry_after_ms", rec.RetryAfter.Milliseconds()))
	}
	log.Info("retry scheduled", fields...)
}

// logStop logs why the loop stopped: at info level when it retried or did
// not succeed, at debug level for a first-attempt success.
func logStop(log *zap.Logger, rep Report) {
	level := zap.InfoLevel
	if rep.Result.Status == StatusSucceeded && len(rep.Attempts) == 1 {
		level = zap.DebugLevel
	}
	ce := log.Check(level, "retry loop stopped")
	if ce == nil {
		return
	}
	fields := []zap.Field{
		zap.String("stop_reason", string(rep.Stop)),
		zap.String("result", rep.Result.String()),
		zap.Int("attempts", len(rep.Attempts)),
		zap.Bool("uncertain", rep.Uncertain),
	}
	if n := len(rep.Attempts); n > 0 {
		last := rep.Attempts[n-1]
		fields = append(fields,
			zap.String("class", string(last.Class)),
			zap.Int("http_status", last.HTTPStatus),
			zap.Float64("budget_tokens", roundTokens(last.TokensAfter)))
		if last.HasRetryAfter {
			fields = append(fields, zap.Int64("retry_after_ms", last.RetryAfter.Milliseconds()))
		}
		if rep.Stop == StopDeadline || rep.Stop == StopRetryAfterTooLong {
			fields = append(fields, zap.Int64("delay_ms", last.Delay.Milliseconds()))
		}
	}
	ce.Write(fields...)
}
