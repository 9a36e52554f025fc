package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	base := map[string]string{"DATABASE_URL": "postgres://u@127.0.0.1:5432/db"}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantVar string // the variable the error names; empty for a valid configuration
	}{
		{"defaults", nil, ""},
		{"no database", map[string]string{"DATABASE_URL": ""}, "DATABASE_URL"},
		{"database not a URL", map[string]string{"DATABASE_URL": "host=x dbname=y"}, "DATABASE_URL"},
		{"bad address", map[string]string{"PAYGATE_ADDR": "8080"}, "PAYGATE_ADDR"},
		{"bad port", map[string]string{"PAYGATE_ADDR": "127.0.0.1:99999"}, "PAYGATE_ADDR"},
		{"unknown processor", map[string]string{"PAYGATE_PROCESSOR": "paypal"}, "PAYGATE_PROCESSOR"},
		{"stripe without key", map[string]string{"PAYGATE_PROCESSOR": "stripe"}, "STRIPE_SECRET_KEY"},
		{"stripe with bad base", map[string]string{"PAYGATE_PROCESSOR": "stripe", "STRIPE_SECRET_KEY": "sk_test_x", "STRIPE_API_BASE": "ftp://x"}, "STRIPE_API_BASE"},
		{"stripe", map[string]string{"PAYGATE_PROCESSOR": "stripe", "STRIPE_SECRET_KEY": "sk_test_x", "STRIPE_API_BASE": "http://127.0.0.1:12111"}, ""},
		{"bad log level", map[string]string{"PAYGATE_LOG_LEVEL": "loud"}, "PAYGATE_LOG_LEVEL"},
		{"bad max amount", map[string]string{"PAYGATE_MAX_AMOUNT": "-1"}, "PAYGATE_MAX_AMOUNT"},
		{"bad duration", map[string]string{"PAYGATE_SHUTDOWN_TIMEOUT": "soon"}, "PAYGATE_SHUTDOWN_TIMEOUT"},
		{"bad completer idle", map[string]string{"PAYGATE_COMPLETER_IDLE": "0s"}, "PAYGATE_COMPLETER_IDLE"},
		{"bad visa cap", map[string]string{"PAYGATE_VISA_REATTEMPTS_30D": "0"}, "PAYGATE_VISA_REATTEMPTS_30D"},
		{"bad schedule", map[string]string{"PAYGATE_RECONCILE_SCHEDULE": "often"}, "PAYGATE_RECONCILE_SCHEDULE"},
		{"bad read rate", map[string]string{"PAYGATE_RECONCILE_READ_RATE": "-3"}, "PAYGATE_RECONCILE_READ_RATE"},
		{"bad pool size", map[string]string{"PAYGATE_DB_MAX_CONNS": "1"}, "PAYGATE_DB_MAX_CONNS"},
		{"budget per process", map[string]string{"PAYGATE_BUDGET_SCOPE": "process"}, ""},
		{"budget for the fleet", map[string]string{"PAYGATE_BUDGET_SCOPE": "fleet"}, ""},
		{"unknown budget scope", map[string]string{"PAYGATE_BUDGET_SCOPE": "cluster"}, "PAYGATE_BUDGET_SCOPE"},
		{"read database", map[string]string{"PAYGATE_READ_DATABASE_URL": "postgres://u@127.0.0.1:5433,127.0.0.1:5432/db?target_session_attrs=prefer-standby"}, ""},
		{"read database not a URL", map[string]string{"PAYGATE_READ_DATABASE_URL": "host=x"}, "PAYGATE_READ_DATABASE_URL"},
		{"multi-host database", map[string]string{"DATABASE_URL": "postgres://u@127.0.0.1:5432,127.0.0.1:5433/db?target_session_attrs=read-write"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{}
			for k, v := range base {
				env[k] = v
			}
			for k, v := range tc.env {
				env[k] = v
			}
			_, err := loadConfig(func(k string) string { return env[k] }, true)
			var ce *configError
			switch {
			case tc.wantVar == "" && err != nil:
				t.Fatalf("got %v, want a valid configuration", err)
			case tc.wantVar != "" && (!errors.As(err, &ce) || ce.Var != tc.wantVar):
				t.Fatalf("got %v, want an error naming %s", err, tc.wantVar)
			case tc.wantVar != "" && strings.Contains(err.Error(), "\n"):
				t.Fatalf("got a multi-line error %q, want one line", err)
			}
		})
	}
}

func TestRunUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 2},
		{[]string{"frobnicate"}, 2},
		{[]string{"help"}, 0},
		{[]string{"migrate", "extra"}, 2},
		{[]string{"keys"}, 2},
		{[]string{"serve", "extra"}, 2},
	} {
		var out, errOut bytes.Buffer
		env := map[string]string{"DATABASE_URL": "postgres://u@127.0.0.1:1/db"}
		if got := Run(context.Background(), tc.args, &out, &errOut, func(k string) string { return env[k] }); got != tc.want {
			t.Errorf("paygate %v: exit %d, want %d (%s)", tc.args, got, tc.want, errOut.String())
		}
	}
	// A configuration error is one line naming the variable, and a non-zero exit.
	var out, errOut bytes.Buffer
	if got := Run(context.Background(), []string{"serve"}, &out, &errOut, func(string) string { return "" }); got == 0 ||
		strings.Count(strings.TrimSpace(errOut.String()), "\n") != 0 || !strings.Contains(errOut.String(), "DATABASE_URL") {
		t.Fatalf("serve without DATABASE_URL: exit %d, stderr %q", got, errOut.String())
	}
}

// TestServeRequiresProcessor: serve never charges against the simulator unless told to: with
// PAYGATE_PROCESSOR unset it exits 2 with one line naming the variable, before it binds or
// connects to anything, while the commands that talk to no processor need no such setting.
func TestServeRequiresProcessor(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "postgres://u@127.0.0.1:1/db", "PAYGATE_ADDR": "127.0.0.1:0"}
	var out, errOut bytes.Buffer
	got := Run(context.Background(), []string{"serve"}, &out, &errOut, func(k string) string { return env[k] })
	if msg := strings.TrimSpace(errOut.String()); got != 2 || strings.Contains(msg, "\n") ||
		!strings.HasPrefix(msg, "paygate: PAYGATE_PROCESSOR: is required") {
		t.Fatalf("serve without PAYGATE_PROCESSOR: exit %d, stderr %q; want exit 2 and one line naming PAYGATE_PROCESSOR", got, msg)
	}
	for _, processor := range []string{"", "sim", "stripe"} {
		env := map[string]string{"DATABASE_URL": "postgres://u@127.0.0.1:1/db", "PAYGATE_PROCESSOR": processor, "STRIPE_SECRET_KEY": "sk_test_x"}
		c, err := loadConfig(func(k string) string { return env[k] }, true)
		if err != nil || c.Processor != processor {
			t.Fatalf("loadConfig with PAYGATE_PROCESSOR=%q: got %q, %v; want it as set, for the commands that need none", processor, c.Processor, err)
		}
	}
}
