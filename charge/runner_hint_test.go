package charge

import (
	"testing"
	"time"

	"github.com/paygate/paygate/retry"
)

func TestRetryAfterHint(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	open, err := retry.NewCircuit(retry.BreakerConfig{ConsecutiveFailures: 1, FailureRatio: 1, MinRequests: 1,
		Window: time.Second, OpenFor: 5 * time.Second, Probes: 1})
	if err != nil {
		t.Fatal(err)
	}
	ticket, _ := open.Allow(t0)
	open.Done(t0, ticket, retry.HealthFailure) // open from t0 to t0+5 s
	closed, err := retry.NewCircuit(retry.DefaultBreakerConfig())
	if err != nil {
		t.Fatal(err)
	}
	answered := func(after, retryAfter time.Duration) retry.AttemptRecord {
		return retry.AttemptRecord{StartedAt: t0, Duration: after, HasRetryAfter: true, RetryAfter: retryAfter}
	}
	for _, tc := range []struct {
		name    string
		rep     retry.Report
		breaker retry.Breaker
		want    time.Duration
	}{
		{"no hint", retry.Report{End: t0.Add(time.Second), Attempts: []retry.AttemptRecord{{StartedAt: t0}}}, closed, 0},
		{"what remains of Retry-After", retry.Report{End: t0.Add(2 * time.Second),
			Attempts: []retry.AttemptRecord{answered(100*time.Millisecond, 30*time.Second)}}, closed, 28100 * time.Millisecond},
		{"Retry-After already over", retry.Report{End: t0.Add(40 * time.Second),
			Attempts: []retry.AttemptRecord{answered(0, 30*time.Second)}}, closed, 0},
		{"open circuit", retry.Report{Stop: retry.StopCircuitOpen, End: t0.Add(time.Second)}, open, 4 * time.Second},
		{"the longer of both", retry.Report{Stop: retry.StopCircuitOpen, End: t0.Add(time.Second),
			Attempts: []retry.AttemptRecord{answered(0, 2*time.Second)}}, open, 4 * time.Second},
		{"open circuit, another stop", retry.Report{Stop: retry.StopDeadline, End: t0.Add(time.Second)}, open, 0},
		{"no breaker", retry.Report{Stop: retry.StopCircuitOpen, End: t0}, nil, 0},
	} {
		if got := retryAfterHint(tc.rep, tc.breaker); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
