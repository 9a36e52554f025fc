package policysim

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/paygate/paygate/retry"
)

// Output is the result of one simulation, printable three ways. The same
// file and seed always print the same bytes.
type Output interface {
	// WriteText prints a readable account: the timeline of one operation, or
	// a population's totals and attempts per second.
	WriteText(w io.Writer) error
	// WriteJSON prints the result as one JSON object (the fields are in the
	// simulators' reference, docs/simulators.md).
	WriteJSON(w io.Writer) error
	// WriteSVG draws the result as an SVG image: one operation's attempts on
	// its timeline, or a population's attempts per second.
	WriteSVG(w io.Writer) error
}

// DefaultSeed is the seed used when none is given, so a simulation is
// reproducible by default.
const DefaultSeed = 1

// Run simulates f with seed: a *Timeline when f has a script, a *Summary
// when it has a population. It returns ctx's error if ctx ends first, and a
// *retry.ConfigError for a File that Parse would have refused.
func Run(ctx context.Context, f *File, seed uint64) (Output, error) {
	if f.Population != nil {
		return RunPopulation(ctx, f, seed)
	}
	return RunScript(ctx, f, seed)
}

// Timeline is the simulation of one scripted operation.
type Timeline struct {
	// File is the simulated file.
	File *File
	// Seed is the seed of the jitter.
	Seed uint64
	// Report is the retry loop's own report of the operation.
	Report retry.Report
	// Keys are the distinct idempotency keys the attempts carried, in
	// order: one for a keyed operation, none without a key.
	Keys []string
}

// ErrNoScript is returned by RunScript for a file without a script.
var ErrNoScript = errors.New("policysim: the file has no script")

// RunScript runs the gateway's retry loop for the one operation of f's
// script on the fake clock. Attempt n gets the script's step n; when the
// loop asks for more attempts than the script holds, the last step answers
// again. It returns ErrNoScript for a file without a script, ctx's error if
// ctx ends first, and a *retry.ConfigError for a File that Parse would have
// refused.
func RunScript(ctx context.Context, f *File, seed uint64) (*Timeline, error) {
	if len(f.Script) == 0 {
		return nil, ErrNoScript
	}
	g, err := newGateway(f, nil, seed)
	if err != nil {
		return nil, err
	}
	t := &Timeline{File: f, Seed: seed, Keys: []string{}}
	e := &engine{
		operations: 1,
		interval:   time.Second,
		cancelAt:   f.Operation.CancelAt,
		skew:       f.ClockSkew,
		start:      g.start,
		respond: func(_, n int, _ time.Duration) Step {
			return f.Script[min(n, len(f.Script))-1]
		},
		finished: func(_ int, l loop) {
			gl := l.(*gatewayLoop)
			t.Report = gl.run.Report()
			t.Keys = append(t.Keys, gl.keys...)
		},
	}
	if err := e.run(ctx); err != nil {
		return nil, err
	}
	return t, nil
}
