package policysim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paygate/paygate/retry"
)

// Summary is the simulation of a population: many operations arriving at a
// steady rate, each running its own retry loop, all sharing one budget and
// one breaker.
type Summary struct {
	// File is the simulated file.
	File *File
	// Seed is the seed of the jitter and of the random faults.
	Seed uint64
	// Operations and Attempts count the operations and every attempt they
	// sent.
	Operations, Attempts int
	// Succeeded, Declined, Pending and Failed count the operations by
	// result.
	Succeeded, Declined, Pending, Failed int
	// FailedByCode counts the failed operations by failure code.
	FailedByCode map[string]int
	// RetriesPreventedByBudget counts the operations whose loop stopped
	// because the budget refused a retry.
	RetriesPreventedByBudget int
	// MostAttempts is the most attempts one operation sent.
	MostAttempts int
	// PerSecond counts the attempts started in each simulated second, from
	// the first arrival until the last operation stopped.
	PerSecond []Second
	// Duration is how long the simulation lasted on the fake clock: from
	// the first arrival until the last operation stopped.
	Duration time.Duration
}

// Second counts the attempts started in one simulated second: originals
// (first attempts) and retries apart.
type Second struct {
	Second    int `json:"second"`
	Originals int `json:"originals"`
	Retries   int `json:"retries"`
}

// Amplification returns attempts per operation.
func (s *Summary) Amplification() float64 {
	if s.Operations == 0 {
		return 0
	}
	return float64(s.Attempts) / float64(s.Operations)
}

// SuccessRate returns the share of operations that succeeded.
func (s *Summary) SuccessRate() float64 {
	if s.Operations == 0 {
		return 0
	}
	return float64(s.Succeeded) / float64(s.Operations)
}

// PeakPerSecond returns the most attempts started in one second.
func (s *Summary) PeakPerSecond() int {
	peak := 0
	for _, sec := range s.PerSecond {
		peak = max(peak, sec.Originals+sec.Retries)
	}
	return peak
}

// ErrNoPopulation is returned by RunPopulation for a file without a
// population.
var ErrNoPopulation = errors.New("policysim: the file has no population")

// RunPopulation runs f's population through the gateway's retry loop on the
// fake clock: operation i arrives at i / rate_per_sec and runs its own
// retry.Run, under the one budget and the one breaker of f's policy. An
// attempt that starts in the outage window is answered with the outage's
// status; any other is answered with the error status at random, with
// probability error_rate, else 200. The draw for attempt n of operation i
// depends only on the seed, i and n, so two policies run on the same seed
// meet the same faults. It returns ctx's error if ctx ends first.
func RunPopulation(ctx context.Context, f *File, seed uint64) (*Summary, error) {
	g, err := newGateway(f, nil, seed)
	if err != nil {
		return nil, err
	}
	return simulate(ctx, f, seed, g.start)
}

// simulate runs f's population with the loops start returns.
func simulate(ctx context.Context, f *File, seed uint64, start starter) (*Summary, error) {
	p := f.Population
	if p == nil {
		return nil, ErrNoPopulation
	}
	s := &Summary{File: f, Seed: seed, Operations: p.Operations, FailedByCode: map[string]int{}}
	e := &engine{
		operations: p.Operations,
		interval:   p.interval(),
		cancelAt:   f.Operation.CancelAt,
		skew:       f.ClockSkew,
		start:      start,
		respond: func(op, n int, at time.Duration) Step {
			return p.answer(seed, op, n, at)
		},
		finished: func(_ int, l loop) { s.add(l.outcome()) },
	}
	if err := e.run(ctx); err != nil {
		return nil, err
	}
	s.Attempts = e.stats.attempts
	s.Duration = e.stats.end.Sub(origin)
	// One entry per simulated second, up to the last operation's end.
	s.PerSecond = e.stats.perSecond
	for len(s.PerSecond) < int((s.Duration+time.Second-1)/time.Second) {
		s.PerSecond = append(s.PerSecond, Second{Second: len(s.PerSecond)})
	}
	return s, nil
}

// add counts one operation's outcome.
func (s *Summary) add(o opOutcome) {
	s.MostAttempts = max(s.MostAttempts, o.attempts)
	if o.stop == string(retry.StopBudget) {
		s.RetriesPreventedByBudget++
	}
	switch {
	case o.result == string(retry.StatusSucceeded):
		s.Succeeded++
	case o.result == string(retry.StatusDeclined):
		s.Declined++
	case o.result == string(retry.StatusPending):
		s.Pending++
	default:
		s.Failed++
		s.FailedByCode[strings.TrimPrefix(o.result, string(retry.StatusFailed)+":")]++
	}
}

// answer returns the processor's answer to attempt n of operation op, sent
// at at since the simulation's start.
func (p *Population) answer(seed uint64, op, n int, at time.Duration) Step {
	if o := p.Outage; o != nil && at >= o.From && at < o.To {
		return Step{Status: o.Status, Latency: p.Latency}
	}
	if p.ErrorRate > 0 && draw(seed, op, n) < p.ErrorRate {
		return Step{Status: p.errorStatus(), Latency: p.Latency}
	}
	return Step{Status: 200, Latency: p.Latency}
}

// draw returns a uniform number in [0, 1) that depends only on seed, op and
// n (splitmix64 mixing).
func draw(seed uint64, op, n int) float64 {
	x := mix(seed ^ faultStream<<62)
	x = mix(x ^ uint64(op))
	x = mix(x ^ uint64(n)<<40)
	return float64(x>>11) / (1 << 53)
}

// mix is splitmix64's finaliser applied after its increment.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// summaryJSON is the --json form of a Summary.
type summaryJSON struct {
	Operations               int            `json:"operations"`
	Attempts                 int            `json:"attempts"`
	Amplification            jsonFloat      `json:"amplification"`
	Succeeded                int            `json:"succeeded"`
	Declined                 int            `json:"declined"`
	Pending                  int            `json:"pending"`
	Failed                   int            `json:"failed"`
	FailedByCode             map[string]int `json:"failed_by_code"`
	RetriesPreventedByBudget int            `json:"retries_prevented_by_budget"`
	MostAttempts             int            `json:"most_attempts_per_operation"`
	DurationMs               int64          `json:"duration_ms"`
	PerSecond                []Second       `json:"per_second"`
}

// jsonFloat is a float printed with 4 decimals.
type jsonFloat float64

// MarshalJSON prints f with 4 decimals.
func (f jsonFloat) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, float64(f), 'f', 4, 64), nil
}

// WriteJSON prints {"operations", "attempts", "amplification", "succeeded",
// "declined", "pending", "failed", "failed_by_code",
// "retries_prevented_by_budget", "most_attempts_per_operation",
// "duration_ms", "per_second": [{"second", "originals", "retries"}]}.
func (s *Summary) WriteJSON(w io.Writer) error {
	perSecond := s.PerSecond
	if perSecond == nil {
		perSecond = []Second{}
	}
	return writeJSON(w, summaryJSON{
		Operations:               s.Operations,
		Attempts:                 s.Attempts,
		Amplification:            jsonFloat(s.Amplification()),
		Succeeded:                s.Succeeded,
		Declined:                 s.Declined,
		Pending:                  s.Pending,
		Failed:                   s.Failed,
		FailedByCode:             s.FailedByCode,
		RetriesPreventedByBudget: s.RetriesPreventedByBudget,
		MostAttempts:             s.MostAttempts,
		DurationMs:               s.Duration.Milliseconds(),
		PerSecond:                perSecond,
	})
}

// WriteText prints the population, the policy, the totals and a bar per
// simulated second.
func (s *Summary) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	f := s.File
	if f.Description != "" {
		fmt.Fprintf(bw, "%s\n\n", f.Description)
	}
	fmt.Fprintf(bw, "population: %s\n", describePopulation(f.Population))
	writePolicy(bw, f)
	fmt.Fprintf(bw, "operation: %s\n\n", describeOperation(f.Operation, ""))

	fmt.Fprintf(bw, "attempts: %d for %d operations (amplification %.4f); most on one operation: %d\n",
		s.Attempts, s.Operations, s.Amplification(), s.MostAttempts)
	fmt.Fprintf(bw, "results: succeeded %d (%.2f %%), declined %d, pending %d, failed %d",
		s.Succeeded, 100*s.SuccessRate(), s.Declined, s.Pending, s.Failed)
	if len(s.FailedByCode) > 0 {
		var parts []string
		for _, code := range slices.Sorted(maps.Keys(s.FailedByCode)) {
			parts = append(parts, fmt.Sprintf("%s %d", code, s.FailedByCode[code]))
		}
		fmt.Fprintf(bw, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintf(bw, "\nretries prevented by budget: %d\n", s.RetriesPreventedByBudget)
	fmt.Fprintf(bw, "simulated time: %s\n\n", ms(s.Duration))

	const width = 50
	size, rows := bins(s.PerSecond, maxBars)
	peak := 1.0
	for _, b := range rows {
		peak = max(peak, b.originals+b.retries)
	}
	if size == 1 {
		fmt.Fprintf(bw, "%6s %9s %8s  (o: originals, r: retries)\n", "second", "originals", "retries")
	} else {
		fmt.Fprintf(bw, "mean attempts per second over %d s:\n%6s %9s %8s  (o: originals, r: retries)\n",
			size, "from", "originals", "retries")
	}
	for _, b := range rows {
		o := int(math.Round(b.originals * width / peak))
		r := int(math.Round((b.originals+b.retries)*width/peak)) - o
		fmt.Fprintf(bw, "%6d %9s %8s  %s%s\n", b.from, fmtCount(b.originals), fmtCount(b.retries),
			strings.Repeat("o", o), strings.Repeat("r", r))
	}
	return bw.Flush()
}

// fmtCount formats a count, or a mean count with one decimal.
func fmtCount(f float64) string {
	if f == math.Trunc(f) {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'f', 1, 64)
}

// describePopulation says what population runs.
func describePopulation(p *Population) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d operations at %s/s, answers in %s", p.Operations, fmtNumber(p.RatePerSec), ms(p.Latency))
	if o := p.Outage; o != nil {
		fmt.Fprintf(&b, ", outage from %d to %d ms answering %d", o.From.Milliseconds(), o.To.Milliseconds(), o.Status)
	}
	if p.ErrorRate > 0 {
		fmt.Fprintf(&b, ", %s of attempts answered %d at random", percent(p.ErrorRate), p.errorStatus())
	}
	return b.String()
}
