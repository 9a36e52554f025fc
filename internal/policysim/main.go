package policysim

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// usage is the command line of the simulator.
const usage = "usage: paygate simulate FILE [--json] [--seed N] [--svg OUT]"

// fileHelp is what --help says of FILE after the usage line; docs/simulators.md has the
// whole format.
const fileHelp = `
FILE is one JSON object: "policy", "operation", "clock_skew_ms", and a
"script" of the processor's answers to one operation or a "population" of
operations (the format is in docs/simulators.md). An
invalid FILE exits 2 with one line naming the field.

The fake clock reads Mon, 02 Mar 2026 12:00:00 GMT when the simulation
starts: write a step's HTTP-dates against it. A step's "retry_after" (a
string, or a whole number of seconds) and "date" ("" for no Date header) are
header values sent as they are, any text without control characters, and
read as the gateway reads them: a Retry-After that is neither delta-seconds
nor an HTTP-date is ignored and the loop backs off; a Date header, or a
clock_skew_ms, further than policy.max_clock_skew_ms (default 30000) from the
fake clock is corrected only that far, and one that is no HTTP-date is
ignored. The text output notes each. A population's outage status is an
error status the loop retries: 429 or 500 to 599.

flags:`

// Exit statuses of Main.
const (
	// ExitOK: the simulation ran and its output was written.
	ExitOK = 0
	// ExitFailure: the simulation could not finish or its output could not
	// be written (the context ended, the SVG file could not be created).
	ExitFailure = 1
	// ExitUsage: the command line or the FILE is invalid.
	ExitUsage = 2
)

// Main runs the command "paygate simulate FILE [--json] [--seed N] [--svg
// OUT]"; args are the arguments after "simulate", flags before or after
// FILE. It prints the simulation of FILE to stdout (a readable timeline, or
// one JSON object with --json), writes the SVG picture to OUT with --svg,
// and returns the exit status: ExitOK; ExitUsage with one line on stderr for
// a bad command line or an invalid FILE, naming the field (or the line and
// column of malformed JSON); ExitFailure when the simulation or the output
// fails. --seed (default DefaultSeed) seeds the jitter and the random
// faults: the same FILE and seed always print the same bytes. --help prints
// the usage to stdout.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fail := func(code int, format string, a ...any) int {
		msg := strings.ReplaceAll(fmt.Sprintf(format, a...), "\n", " ")
		fmt.Fprintf(stderr, "paygate simulate: %s\n", msg)
		return code
	}
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	jsonOut := fs.Bool("json", false, "print one JSON object instead of the readable timeline")
	seed := fs.Uint64("seed", DefaultSeed, "seed of the jitter and the random faults")
	svgOut := fs.String("svg", "", "write an SVG picture to this file")
	var files []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintln(stdout, usage)
				fmt.Fprintln(stdout, fileHelp)
				fs.SetOutput(stdout)
				fs.PrintDefaults()
				return ExitOK
			}
			return fail(ExitUsage, "%v (%s)", err, usage)
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(files) != 1 {
		return fail(ExitUsage, "want exactly one FILE, got %d (%s)", len(files), usage)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		return fail(ExitUsage, "%v", err)
	}
	f, err := Parse(data)
	if err != nil {
		return fail(ExitUsage, "%v", err)
	}
	out, err := Run(ctx, f, *seed)
	if err != nil {
		return fail(ExitFailure, "%v", err)
	}
	if *svgOut != "" {
		var svg bytes.Buffer
		if err := out.WriteSVG(&svg); err != nil {
			return fail(ExitFailure, "%v", err)
		}
		if err := os.WriteFile(*svgOut, svg.Bytes(), 0o644); err != nil {
			return fail(ExitFailure, "--svg: %v", err)
		}
	}
	write := out.WriteText
	if *jsonOut {
		write = out.WriteJSON
	}
	if err := write(stdout); err != nil {
		return fail(ExitFailure, "%v", err)
	}
	return ExitOK
}
