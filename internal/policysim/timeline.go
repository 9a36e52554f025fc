package policysim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/paygate/paygate/retry"
)

// AttemptLine is one attempt of a Timeline, as printed by WriteJSON. Every
// field comes from the loop's own retry.AttemptRecord; times are whole
// milliseconds.
type AttemptLine struct {
	// N is the attempt's number, from 1.
	N int `json:"n"`
	// AtMs is when it started, from the operation's start.
	AtMs int64 `json:"at_ms"`
	// TimeoutMs is its timeout: min(attempt timeout, remaining − answer
	// margin).
	TimeoutMs int64 `json:"timeout_ms"`
	// Status is the HTTP status of the answer; null without one.
	Status *int `json:"status"`
	// Class is the answer's class.
	Class retry.Class `json:"class"`
	// BackoffCapMs is the backoff ceiling of the retry considered after the
	// attempt, and DelayMs the wait chosen: max(jittered backoff,
	// Retry-After, busy wait); both 0 when no retry was considered.
	BackoffCapMs int64 `json:"backoff_cap_ms"`
	DelayMs      int64 `json:"delay_ms"`
	// RetryAfterMs is the processor's valid Retry-After; null without one.
	RetryAfterMs *int64 `json:"retry_after_ms"`
	// RemainingMs is the time left before the deadline when the attempt
	// started.
	RemainingMs int64 `json:"remaining_ms"`
	// TokensBefore and TokensAfter are the budget's tokens around the retry
	// decision, to 1/1000; equal when nothing was spent.
	TokensBefore float64 `json:"tokens_before"`
	TokensAfter  float64 `json:"tokens_after"`
}

// Result returns the operation's result: "succeeded", "declined",
// "pending" or "failed:CODE".
func (t *Timeline) Result() string { return t.Report.Result.String() }

// Attempts returns the timeline's attempts, built from the loop's report.
func (t *Timeline) Attempts() []AttemptLine {
	lines := make([]AttemptLine, len(t.Report.Attempts))
	for i, rec := range t.Report.Attempts {
		l := AttemptLine{
			N:            rec.N,
			AtMs:         rec.StartedAt.Sub(t.Report.Start).Milliseconds(),
			TimeoutMs:    rec.Timeout.Milliseconds(),
			Class:        rec.Class,
			BackoffCapMs: rec.BackoffCap.Milliseconds(),
			DelayMs:      rec.Delay.Milliseconds(),
			RemainingMs:  rec.Remaining.Milliseconds(),
			TokensBefore: roundTokens(rec.TokensBefore),
			TokensAfter:  roundTokens(rec.TokensAfter),
		}
		if rec.HTTPStatus != 0 {
			status := rec.HTTPStatus
			l.Status = &status
		}
		if rec.HasRetryAfter {
			ms := rec.RetryAfter.Milliseconds()
			l.RetryAfterMs = &ms
		}
		lines[i] = l
	}
	return lines
}

// roundTokens rounds a token count to 1/1000, as the loop's report does.
func roundTokens(f float64) float64 {
	return math.Round(f*1000) / 1000
}

// timelineJSON is the --json form of a Timeline.
type timelineJSON struct {
	Result          string        `json:"result"`
	Attempts        []AttemptLine `json:"attempts"`
	IdempotencyKeys []string      `json:"idempotency_keys"`
}

// WriteJSON prints {"result", "attempts", "idempotency_keys"}.
func (t *Timeline) WriteJSON(w io.Writer) error {
	return writeJSON(w, timelineJSON{Result: t.Result(), Attempts: t.Attempts(), IdempotencyKeys: t.Keys})
}

// writeJSON prints v indented, with a final newline.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteText prints the policy, one line per attempt, why the loop stopped
// and the result.
func (t *Timeline) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	f := t.File
	if f.Description != "" {
		fmt.Fprintf(bw, "%s\n\n", f.Description)
	}
	writePolicy(bw, f)
	fmt.Fprintf(bw, "operation: %s\n\n", describeOperation(f.Operation, t.Report.IdempotencyKey))

	fmt.Fprintf(bw, "%3s %6s %7s %10s %6s  %-26s %14s %8s %14s %12s  %s\n",
		"n", "at_ms", "took_ms", "timeout_ms", "status", "class (code)", "backoff_cap_ms", "delay_ms",
		"retry_after_ms", "remaining_ms", "tokens")
	for i, l := range t.Attempts() {
		rec := t.Report.Attempts[i]
		status := "-"
		if l.Status != nil {
			status = strconv.Itoa(*l.Status)
		}
		class := string(l.Class)
		if rec.ProcessorCode != "" {
			class += " (" + rec.ProcessorCode + ")"
		}
		retryAfter := "-"
		switch {
		case l.RetryAfterMs != nil:
			retryAfter = strconv.FormatInt(*l.RetryAfterMs, 10)
		case rec.RetryAfterHeader != "":
			retryAfter = "invalid"
		}
		tokens := fmtTokens(l.TokensBefore)
		if l.TokensAfter != l.TokensBefore {
			tokens += " → " + fmtTokens(l.TokensAfter)
		}
		fmt.Fprintf(bw, "%3d %6d %7d %10d %6s  %-26s %14d %8d %14s %12d  %s\n",
			l.N, l.AtMs, rec.Duration.Milliseconds(), l.TimeoutMs, status, class,
			l.BackoffCapMs, l.DelayMs, retryAfter, l.RemainingMs, tokens)
	}
	if notes := t.notes(); len(notes) > 0 {
		fmt.Fprintf(bw, "\nnotes:\n")
		for _, n := range notes {
			fmt.Fprintf(bw, "  %s\n", n)
		}
	}
	rep := t.Report
	fmt.Fprintf(bw, "\nstopped: %s after %d attempt%s at %d ms (deadline at %d ms)\n",
		rep.Stop, len(rep.Attempts), plural(len(rep.Attempts)),
		rep.End.Sub(rep.Start).Milliseconds(), rep.Deadline.Sub(rep.Start).Milliseconds())
	if rep.Uncertain {
		fmt.Fprintf(bw, "uncertain: an attempt may have executed at the processor\n")
	}
	fmt.Fprintf(bw, "result: %s\n", t.Result())
	return bw.Flush()
}

// writePolicy prints the policy, budget and breaker of f.
func writePolicy(w io.Writer, f *File) {
	p := f.Policy
	fmt.Fprintf(w, "policy: deadline %s, attempt timeout %s, backoff %s up to %s, at most %d attempts, Retry-After cap %s, minimum attempt %s\n",
		ms(p.Deadline), ms(p.AttemptTimeout), ms(p.Base), ms(p.Cap), p.MaxAttempts, ms(p.RetryAfterCap), ms(p.MinAttempt))
	if b := f.Budget; b != nil {
		fmt.Fprintf(w, "budget: %s token per success, floor %s/s, burst %s\n",
			fmtNumber(b.Ratio), fmtNumber(b.MinPerSec), fmtNumber(b.Burst))
	} else {
		fmt.Fprintf(w, "budget: none\n")
	}
	if c := f.Breaker; c != nil {
		fmt.Fprintf(w, "breaker: opens after %d failures in a row or %s of at least %d in %s, stays open %s, then %d probes\n",
			c.ConsecutiveFailures, percent(c.FailureRatio), c.MinRequests, ms(c.Window), ms(c.OpenFor), c.Probes)
	} else {
		fmt.Fprintf(w, "breaker: none\n")
	}
	if f.ClockSkew != 0 {
		fmt.Fprintf(w, "processor clock: %+d ms from ours", f.ClockSkew.Milliseconds())
		if f.ClockSkew > p.MaxClockSkew || -f.ClockSkew > p.MaxClockSkew {
			// As in the gateway: a Date header moves the loop's clock by at
			// most MaxClockSkew.
			fmt.Fprintf(w, " (the loop corrects at most %s of it: max_clock_skew_ms)", ms(p.MaxClockSkew))
		}
		fmt.Fprintln(w)
	}
}

// describeOperation says what kind of operation runs.
func describeOperation(op Operation, key string) string {
	switch {
	case op.Read():
		return op.Method + " (a read: idempotent)"
	case key != "":
		return op.Method + " with idempotency key " + key
	case op.IdempotencyKey:
		return op.Method + " with an idempotency key"
	default:
		return op.Method + " without idempotency key (never repeated once it may have been sent)"
	}
}

// ms formats a duration in whole milliseconds.
func ms(d time.Duration) string {
	return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
}

func fmtTokens(f float64) string {
	return strconv.FormatFloat(f, 'f', 3, 64)
}

func percent(f float64) string {
	return strconv.FormatFloat(f*100, 'f', -1, 64) + " %"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
