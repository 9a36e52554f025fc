package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestRunDatabaseErrors: a DATABASE_URL that pgx cannot parse, or that points at a database
// that cannot be reached, exits non-zero with one line naming the variable and keeping the
// reason, and never the password.
func TestRunDatabaseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, url  string
		wantReason string
	}{
		{"unparsable", "postgres://u:s3cretpw@127.0.0.1:5432/db?sslmode=bogus", "sslmode is invalid"},
		{"unparsable, escaped password", "postgres://u:s3cret%2Fpw@127.0.0.1:5432/db?sslmode=bogus", "sslmode is invalid"},
		{"unreachable", "postgres://u:s3cretpw@127.0.0.1:1/db?sslmode=disable", "connection refused"},
	} {
		for _, args := range [][]string{
			{"serve"},
			{"migrate"},
			{"keys", "create", "--merchant", "m", "--role", "checkout"},
		} {
			t.Run(tc.name+"/"+args[0], func(t *testing.T) {
				t.Parallel()
				env := map[string]string{"DATABASE_URL": tc.url, "PAYGATE_PROCESSOR": "sim", "PAYGATE_ADDR": "127.0.0.1:0",
					"PAYGATE_SIM_ADDR": "127.0.0.1:0"}
				var out, errOut bytes.Buffer
				code := Run(context.Background(), args, &out, &errOut, func(k string) string { return env[k] })
				msg := errOut.String()
				switch {
				case code == 0:
					t.Fatalf("exit 0, want non-zero")
				case strings.Count(strings.TrimSuffix(msg, "\n"), "\n") != 0:
					t.Fatalf("got %q, want one line", msg)
				case !strings.Contains(msg, "DATABASE_URL"):
					t.Fatalf("got %q, want it to name DATABASE_URL", msg)
				case !strings.Contains(msg, tc.wantReason):
					t.Fatalf("got %q, want the reason %q", msg, tc.wantReason)
				case strings.Contains(msg, "s3cret"):
					t.Fatalf("got %q, which shows the password", msg)
				}
			})
		}
	}
}

func TestOneLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
	}{
		{"plain", "plain"},
		{"failed to connect to `user=u database=db`:\n\t127.0.0.1:1: refused", "failed to connect to `user=u database=db`: 127.0.0.1:1: refused"},
		{"failed:\n\ta: refused\n\tb: refused\n", "failed: a: refused; b: refused"},
	} {
		if got := oneLine(errors.New(tc.in)); got != tc.want {
			t.Errorf("oneLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRedactPassword(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		msg, url, want string
	}{
		{"x p%40ss y p@ss", "postgres://u:p%40ss@h/db", "x xxxxx y xxxxx"},
		{"no password here", "postgres://u@h/db", "no password here"},
	} {
		if got := redactPassword(tc.msg, tc.url); got != tc.want {
			t.Errorf("redactPassword(%q, %q) = %q, want %q", tc.msg, tc.url, got, tc.want)
		}
	}
}
