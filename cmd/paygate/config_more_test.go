package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/internal/sim"
)

// exited is how a run of the built binary ended.
type exited struct {
	code   int    // the exit status; -1 when the process was still running at the limit
	output string // stdout and stderr, interleaved
}

// runBinary runs the built paygate with args and env (on top of this process's environment
// without its paygate, processor and database settings) and waits at most limit for it to
// exit; a process still running then is killed and reported with code -1.
func runBinary(t *testing.T, bin string, limit time.Duration, env []string, args ...string) exited {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PAYGATE_") && !strings.HasPrefix(kv, "STRIPE_") && !strings.HasPrefix(kv, "DATABASE_URL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return exited{code: -1, output: out.String()}
	case errors.As(err, &ee):
		return exited{code: ee.ExitCode(), output: out.String()}
	case err != nil:
		t.Fatalf("running %v: %v", args, err)
	}
	return exited{code: 0, output: out.String()}
}

// wantOneLine fails the test unless the run exited non-zero (exactly want, when want is not
// 0) with exactly one line of output that names every string of names and none of avoid.
func wantOneLine(t *testing.T, got exited, want int, names, avoid []string) {
	t.Helper()
	switch {
	case got.code == -1:
		t.Fatalf("still running after the limit, want an exit; output:\n%s", got.output)
	case got.code == 0:
		t.Fatalf("exit 0, want non-zero; output:\n%s", got.output)
	case want != 0 && got.code != want:
		t.Fatalf("exit %d, want %d; output:\n%s", got.code, want, got.output)
	case strings.Count(got.output, "\n") != 1 || !strings.HasSuffix(got.output, "\n"):
		t.Fatalf("got output %q, want exactly one line", got.output)
	}
	for _, n := range names {
		if !strings.Contains(got.output, n) {
			t.Errorf("got %q, want it to name %s", got.output, n)
		}
	}
	for _, a := range avoid {
		if strings.Contains(got.output, a) {
			t.Errorf("got %q, want it not to contain %q", got.output, a)
		}
	}
}

// migratedDatabase returns the URL of a new database with paygate's migrations applied.
func migratedDatabase(t *testing.T) string {
	t.Helper()
	url := dbtest.NewDatabase(t)
	var out bytes.Buffer
	env := map[string]string{"DATABASE_URL": url}
	if code := Run(context.Background(), []string{"migrate"}, &out, &out, func(k string) string { return env[k] }); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, out.String())
	}
	return url
}

// busyAddr returns an address something listens on until the test ends.
func busyAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

// deadAddr returns an address nothing listens on: a connection to it is refused.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// notHere is an address of no machine (TEST-NET-1, RFC 5737): it cannot be bound here.
const notHere = "192.0.2.1:8080"

// TestServeConfigurationErrors: `paygate serve` with an address it cannot bind, or a
// processor it cannot use, exits non-zero with one line naming the variable at fault and
// nothing else: every listener is bound before any background work starts (the job queue
// used to log three lines first, and a profiler address in use only logged an error while the
// server kept running), and the processor check names STRIPE_API_BASE or STRIPE_SECRET_KEY.
func TestServeConfigurationErrors(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	dbURL := migratedDatabase(t)

	// A processor that knows one key only, and a server that is not a Stripe API.
	proc := httptest.NewServer(sim.New(sim.Config{SecretKey: "sk_test_rightkey"}))
	t.Cleanup(proc.Close)
	notStripe := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notStripe.Close)
	const wrongKey = "sk_test_wrongkey1234"

	sameAddr := func(addr string) []string { return []string{"PAYGATE_ADDR=" + addr, "PAYGATE_METRICS_ADDR=" + addr} }
	// The processor cases log at the default level: at debug, stripe-go's lines about the
	// request come before the error, as asked. Nothing logs before a bind fails, even at
	// debug.
	stripe := func(key, base string) []string {
		return []string{"PAYGATE_LOG_LEVEL=info", "PAYGATE_PROCESSOR=stripe", "STRIPE_SECRET_KEY=" + key, "STRIPE_API_BASE=" + base}
	}
	for _, tc := range []struct {
		name  string
		env   []string
		names []string // what the line names
		avoid []string // what it must not show
	}{
		{"API address in use", []string{"PAYGATE_ADDR=" + busyAddr(t)}, []string{"PAYGATE_ADDR", "address already in use"}, nil},
		{"API address not on this machine", []string{"PAYGATE_ADDR=" + notHere}, []string{"PAYGATE_ADDR", notHere}, nil},
		{"simulator address in use", []string{"PAYGATE_SIM_ADDR=" + busyAddr(t)}, []string{"PAYGATE_SIM_ADDR", "address already in use"}, nil},
		{"metrics address in use", []string{"PAYGATE_METRICS_ADDR=" + busyAddr(t)}, []string{"PAYGATE_METRICS_ADDR", "address already in use"}, nil},
		{"metrics address not on this machine", []string{"PAYGATE_METRICS_ADDR=" + notHere}, []string{"PAYGATE_METRICS_ADDR"}, nil},
		{"metrics address is the API's", sameAddr(deadAddr(t)), []string{"PAYGATE_METRICS_ADDR", "address already in use"}, nil},
		{"profiler address no longer read", []string{"PAYGATE_DEBUG_ADDR=127.0.0.1:0"}, []string{"PAYGATE_DEBUG_ADDR", "PAYGATE_METRICS_ADDR"}, nil},
		{"processor unreachable", stripe("sk_test_anykey", "http://"+deadAddr(t)),
			[]string{"STRIPE_API_BASE", "connection refused"}, []string{"STRIPE_SECRET_KEY", "sk_test_anykey"}},
		{"processor unreachable, password in its address", stripe("sk_test_anykey", "http://ops:pw_secret@"+deadAddr(t)),
			[]string{"STRIPE_API_BASE", "connection refused"}, []string{"pw_secret", "sk_test_anykey"}},
		{"processor not a Stripe API", stripe("sk_test_anykey", notStripe.URL),
			[]string{"STRIPE_API_BASE", notStripe.URL}, []string{"STRIPE_SECRET_KEY", "sk_test_anykey"}},
		{"key rejected", stripe(wrongKey, proc.URL),
			[]string{"STRIPE_SECRET_KEY", "401"}, []string{"STRIPE_API_BASE", wrongKey}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := append([]string{"DATABASE_URL=" + dbURL, "PAYGATE_PROCESSOR=sim", "PAYGATE_ADDR=127.0.0.1:0",
				"PAYGATE_SIM_ADDR=127.0.0.1:0", "PAYGATE_METRICS_ADDR=127.0.0.1:0", "PAYGATE_LOG_LEVEL=debug"}, tc.env...)
			got := runBinary(t, bin, 30*time.Second, env, "serve")
			wantOneLine(t, got, 1, tc.names, tc.avoid)
		})
	}
}

// TestSimAddressErrors: paygate sim names a bad or busy address as the caller gave it, the
// flag or the variable behind its default, in one line.
func TestSimAddressErrors(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	busy := busyAddr(t)
	for _, tc := range []struct {
		name  string
		env   []string
		args  []string
		names []string
	}{
		{"variable not an address", []string{"PAYGATE_SIM_ADDR=bogus"}, nil, []string{"PAYGATE_SIM_ADDR", "HOST:PORT"}},
		{"flag not an address", nil, []string{"--addr", "bogus"}, []string{"--addr", "HOST:PORT"}},
		{"variable's address in use", []string{"PAYGATE_SIM_ADDR=" + busy}, nil, []string{"PAYGATE_SIM_ADDR", "address already in use"}},
		{"flag's address in use", []string{"PAYGATE_SIM_ADDR=bogus"}, []string{"--addr", busy}, []string{"--addr", "address already in use"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := runBinary(t, bin, 30*time.Second, tc.env, append([]string{"sim"}, tc.args...)...)
			wantOneLine(t, got, 1, tc.names, nil)
		})
	}
}

// TestUnexpectedArguments: a command that takes no positional arguments refuses one with
// exit 2 and one line holding its usage, before it touches the database (no key is
// created), and a keys subcommand refuses the flags of another.
func TestUnexpectedArguments(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	dbURL := migratedDatabase(t)
	env := []string{"DATABASE_URL=" + dbURL, "PAYGATE_ADDR=127.0.0.1:0", "PAYGATE_SIM_ADDR=127.0.0.1:0"}
	type refused struct {
		args  []string
		names []string
	}
	cases := []refused{
		{[]string{"keys", "create", "--merchant", "m_extra", "--role", "checkout", "extra"},
			[]string{`"extra"`, "usage: paygate keys create --merchant M --role checkout|operator|auditor"}},
		{[]string{"keys", "create", "extra", "--merchant", "m_extra", "--role", "checkout"},
			[]string{`"extra"`, "usage: paygate keys create"}},
		{[]string{"keys", "create", "--merchant=m_extra", "--role=checkout", "--", "extra"}, []string{`"extra"`, "usage: paygate keys create"}},
		{[]string{"keys", "list", "extra"}, []string{`"extra"`, "usage: paygate keys list [--merchant M]"}},
		{[]string{"keys", "list", "--role", "checkout"}, []string{"-role", "usage: paygate keys list"}},
		{[]string{"keys", "revoke"}, []string{"usage: paygate keys revoke ID"}},
		{[]string{"keys", "revoke", "key_1", "key_2"}, []string{`"key_2"`, "usage: paygate keys revoke ID"}},
		{[]string{"keys", "revoke", "--merchant", "m_extra", "key_1"}, []string{"-merchant", "usage: paygate keys revoke ID"}},
		{[]string{"keys", "rotate"}, []string{`"rotate"`, "usage: paygate keys"}},
		{[]string{"keys"}, []string{"usage: paygate keys"}},
		{[]string{"serve", "extra"}, []string{`"extra"`, "usage: paygate serve"}},
		{[]string{"migrate", "extra"}, []string{`"extra"`, "usage: paygate migrate"}},
		{[]string{"sim", "extra"}, []string{`"extra"`, "usage: paygate sim [--addr HOST:PORT] [--account ACCT]"}},
		{[]string{"sim", "--port", "1"}, []string{"-port", "usage: paygate sim"}},
	}
	t.Run("refused", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
				t.Parallel()
				got := runBinary(t, bin, 30*time.Second, env, tc.args...)
				wantOneLine(t, got, exitUsage, tc.names, nil)
			})
		}
	})
	// Nothing was created by the refused commands.
	got := runBinary(t, bin, 30*time.Second, env, "keys", "list", "--merchant", "m_extra")
	if got.code != 0 || strings.Contains(got.output, "m_extra") {
		t.Fatalf("keys list --merchant m_extra: exit %d, output %q; want exit 0 and no key", got.code, got.output)
	}
}
