package main

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
)

// TestWebhookConfig: STRIPE_WEBHOOK_SECRET must be a signing secret, PAYGATE_SIM_WEBHOOKS on
// or off; a bad one is one line naming the variable, and never prints the secret.
func TestWebhookConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		env         map[string]string
		wantVar     string
		wantSecret  string
		wantSimHook bool
	}{
		{"defaults", nil, "", "", true},
		{"a secret", map[string]string{"STRIPE_WEBHOOK_SECRET": "whsec_abcdefgh1234"}, "", "whsec_abcdefgh1234", true},
		{"not a signing secret", map[string]string{"STRIPE_WEBHOOK_SECRET": "sk_test_abcdefgh1234"}, "STRIPE_WEBHOOK_SECRET", "", false},
		{"too short", map[string]string{"STRIPE_WEBHOOK_SECRET": "whsec_abc"}, "STRIPE_WEBHOOK_SECRET", "", false},
		{"a space", map[string]string{"STRIPE_WEBHOOK_SECRET": "whsec_abcd efgh1234"}, "STRIPE_WEBHOOK_SECRET", "", false},
		{"simulator's events off", map[string]string{"PAYGATE_SIM_WEBHOOKS": "off"}, "", "", false},
		{"simulator's events on", map[string]string{"PAYGATE_SIM_WEBHOOKS": "on"}, "", "", true},
		{"simulator's events maybe", map[string]string{"PAYGATE_SIM_WEBHOOKS": "maybe"}, "PAYGATE_SIM_WEBHOOKS", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"DATABASE_URL": "postgres://u@127.0.0.1:5432/db"}
			for k, v := range tc.env {
				env[k] = v
			}
			cfg, err := loadConfig(func(k string) string { return env[k] }, true)
			var ce *configError
			switch {
			case tc.wantVar == "" && err != nil:
				t.Fatalf("got %v, want a valid configuration", err)
			case tc.wantVar != "" && (!errors.As(err, &ce) || ce.Var != tc.wantVar):
				t.Fatalf("got %v, want an error naming %s", err, tc.wantVar)
			case tc.wantVar != "":
				if s := env["STRIPE_WEBHOOK_SECRET"]; s != "" && strings.Contains(err.Error(), s) {
					t.Fatalf("the error %q prints the secret", err)
				}
				return
			}
			if cfg.WebhookSecret != tc.wantSecret || cfg.SimWebhooks != tc.wantSimHook {
				t.Fatalf("got secret %q, simulator's events %v; want %q, %v", cfg.WebhookSecret, cfg.SimWebhooks, tc.wantSecret, tc.wantSimHook)
			}
		})
	}
}

// TestSimWebhookFlags: paygate sim takes --webhook-url and --webhook-secret together, an
// http(s) URL and a signing secret, and keeps at least one object of each kind.
func TestSimWebhookFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		args    []string
		wantVar string
	}{
		{"url without secret", []string{"--webhook-url", "http://127.0.0.1:8080/webhooks/stripe"}, "--webhook-secret"},
		{"secret without url", []string{"--webhook-secret", "whsec_abcdefgh1234"}, "--webhook-url"},
		{"not http", []string{"--webhook-url", "ftp://x/y", "--webhook-secret", "whsec_abcdefgh1234"}, "--webhook-url"},
		{"not a signing secret", []string{"--webhook-url", "http://127.0.0.1:1/w", "--webhook-secret", "secret"}, "--webhook-secret"},
		{"nothing kept", []string{"--keep", "0"}, "--keep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"--addr", "127.0.0.1:0"}, tc.args...)
			err := runSim(context.Background(), args, &strings.Builder{}, func(string) string { return "" })
			var ce *configError
			if !errors.As(err, &ce) || ce.Var != tc.wantVar {
				t.Fatalf("got %v, want an error naming %s", err, tc.wantVar)
			}
		})
	}
}

func TestLoopback(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"0.0.0.0:8080": "127.0.0.1:8080", "[::]:8080": "127.0.0.1:8080", "127.0.0.1:9": "127.0.0.1:9", "[::1]:9": "[::1]:9",
		"10.1.2.3:80": "10.1.2.3:80",
	} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := loopback(a); got != want {
			t.Errorf("loopback(%s): got %s, want %s", addr, got, want)
		}
	}
}
