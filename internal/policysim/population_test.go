package policysim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/paygate/paygate/retry"
)

// mustPopulation runs a population or fails the test.
func mustPopulation(t testing.TB, f *File, seed uint64) *Summary {
	t.Helper()
	s, err := RunPopulation(context.Background(), f, seed)
	if err != nil {
		t.Fatalf("RunPopulation: got error %v, want nil", err)
	}
	return s
}

func TestPopulationCounts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
	}{
		{"outage", `{"population": {"operations": 3000, "rate_per_sec": 50, "outage": {"from_ms": 10000, "to_ms": 30000}}}`},
		{"errors", `{"population": {"operations": 3000, "rate_per_sec": 200, "error_rate": 0.3}}`},
		{"timeouts", `{"policy": {"attempt_timeout_ms": 1000}, "population": {"operations": 500, "rate_per_sec": 20, "latency_ms": 1500}}`},
		{"rate limits", `{"population": {"operations": 500, "rate_per_sec": 20, "error_rate": 0.5, "outage": {"from_ms": 0, "to_ms": 1, "status": 429}}}`},
		{"reads", `{"operation": {"method": "GET"}, "population": {"operations": 500, "rate_per_sec": 20, "error_rate": 0.5, "outage": {"from_ms": 0, "to_ms": 1, "status": 500}}}`},
		{"callers give up", `{"operation": {"cancel_at_ms": 300}, "population": {"operations": 500, "rate_per_sec": 20, "error_rate": 0.5}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustPopulation(t, mustParse(t, tt.file), DefaultSeed)
			originals, retries := 0, 0
			for i, sec := range s.PerSecond {
				if sec.Second != i {
					t.Errorf("per_second[%d].second: got %d, want %d", i, sec.Second, i)
				}
				originals += sec.Originals
				retries += sec.Retries
			}
			if want := int((s.Duration + time.Second - 1) / time.Second); len(s.PerSecond) != want {
				t.Errorf("per_second: got %d entries, want one per simulated second, %d", len(s.PerSecond), want)
			}
			if originals+retries != s.Attempts {
				t.Errorf("per_second: got %d originals + %d retries, want %d attempts", originals, retries, s.Attempts)
			}
			if originals > s.Operations {
				t.Errorf("originals: got %d, want at most %d operations", originals, s.Operations)
			}
			if got := s.Succeeded + s.Declined + s.Pending + s.Failed; got != s.Operations {
				t.Errorf("results: got %d in all, want %d operations", got, s.Operations)
			}
			failed := 0
			for _, n := range s.FailedByCode {
				failed += n
			}
			if failed != s.Failed {
				t.Errorf("failed_by_code: got %d in all, want %d failed", failed, s.Failed)
			}
			if s.MostAttempts > retry.DefaultPolicy().MaxAttempts {
				t.Errorf("most attempts: got %d, want at most %d", s.MostAttempts, retry.DefaultPolicy().MaxAttempts)
			}
		})
	}
}

func TestPopulationOutcomes(t *testing.T) {
	t.Parallel()
	t.Run("declines never open the breaker or spend the budget", func(t *testing.T) {
		t.Parallel()
		// A file's outage answers an error status; a wave of declines is
		// built here directly.
		f := mustParse(t, `{"population": {"operations": 2000, "rate_per_sec": 100,
			"outage": {"from_ms": 0, "to_ms": 100000}}}`)
		f.Population.Outage.Status = 402
		s := mustPopulation(t, f, DefaultSeed)
		if s.Declined != s.Operations || s.Attempts != s.Operations {
			t.Errorf("got %d declined in %d attempts, want %d in %d", s.Declined, s.Attempts, s.Operations, s.Operations)
		}
	})
	t.Run("500s on writes are pending, never retried", func(t *testing.T) {
		t.Parallel()
		s := mustPopulation(t, mustParse(t, `{"policy": {"breaker": null}, "population": {"operations": 500, "rate_per_sec": 50,
			"outage": {"from_ms": 0, "to_ms": 100000, "status": 500}}}`), DefaultSeed)
		if s.Pending != s.Operations || s.Attempts != s.Operations {
			t.Errorf("got %d pending in %d attempts, want %d in %d", s.Pending, s.Attempts, s.Operations, s.Operations)
		}
	})
	t.Run("operations after the outage succeed", func(t *testing.T) {
		t.Parallel()
		// 100/s for 30 s, down from 5 s to 10 s: the breaker recovers within
		// its open time and a probe round after the outage.
		s := mustPopulation(t, mustParse(t, `{"population": {"operations": 3000, "rate_per_sec": 100,
			"outage": {"from_ms": 5000, "to_ms": 10000}}}`), DefaultSeed)
		if s.Succeeded < 2000 {
			t.Errorf("succeeded: got %d, want at least the 2000 arriving after the outage", s.Succeeded)
		}
	})
}

func TestPopulationBudgetBoundsRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		ratio float64
		floor float64
		burst float64
	}{
		{"default", 0.15, 1, 10},
		{"no floor", 0.1, 0, 5},
		{"large", 0.5, 3, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := mustParse(t, `{"policy": {"breaker": null}, "population": {"operations": 5000, "rate_per_sec": 100,
				"outage": {"from_ms": 0, "to_ms": 1000000}}}`)
			f.Budget = &retry.BudgetConfig{Ratio: tt.ratio, MinPerSec: tt.floor, Burst: tt.burst}
			s := mustPopulation(t, f, DefaultSeed)
			retries := s.Attempts - s.Operations
			// Nothing succeeds, so only the burst and the floor pay for retries.
			limit := int(tt.burst + tt.floor*s.Duration.Seconds())
			if retries > limit {
				t.Errorf("retries: got %d, want at most burst + floor × %v = %d", retries, s.Duration, limit)
			}
			if s.RetriesPreventedByBudget == 0 {
				t.Errorf("retries prevented by budget: got 0, want some")
			}
		})
	}
}

func TestPopulationSameFaultsForEveryPolicy(t *testing.T) {
	t.Parallel()
	p := &Population{Operations: 100, RatePerSec: 10, ErrorRate: 0.3, Latency: 40 * msec}
	for op := range 100 {
		for n := 1; n <= 5; n++ {
			at := time.Duration(op) * 100 * msec
			if a, b := p.answer(5, op, n, at), p.answer(5, op, n, at+time.Hour); a != b {
				t.Fatalf("operation %d attempt %d: got %+v and %+v at two times, want the same answer", op, n, a, b)
			}
		}
	}
	errorsSeen := 0
	for op := range 10000 {
		if draw(DefaultSeed, op, 1) < 0.3 {
			errorsSeen++
		}
	}
	if errorsSeen < 2800 || errorsSeen > 3200 {
		t.Errorf("errors at a rate of 0.3 over 10000 draws: got %d, want about 3000", errorsSeen)
	}
}

func TestRunPopulationCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := mustParse(t, `{"population": {"operations": 100000, "rate_per_sec": 1000}}`)
	if _, err := RunPopulation(ctx, f, DefaultSeed); !errors.Is(err, context.Canceled) {
		t.Errorf("RunPopulation with an ended context: got error %v, want context.Canceled", err)
	}
}

func TestRunWithoutScenario(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `{"script": [{"status": 200}]}`)
	if _, err := RunPopulation(context.Background(), f, 1); !errors.Is(err, ErrNoPopulation) {
		t.Errorf("RunPopulation of a script: got error %v, want ErrNoPopulation", err)
	}
	f.Script = nil
	if _, err := RunScript(context.Background(), f, 1); !errors.Is(err, ErrNoScript) {
		t.Errorf("RunScript without a script: got error %v, want ErrNoScript", err)
	}
}
