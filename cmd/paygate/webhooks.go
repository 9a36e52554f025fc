package main

import (
	"context"
	"crypto/rand"
	"net"
	"net/url"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/paygate/paygate/internal/sim"
	"github.com/paygate/paygate/jobs"
	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/store"
)

// webhookPath is where the processor's events arrive.
const webhookPath = "/webhooks/stripe"

// reconcileWorkers is how many reconciliation jobs one replica runs at once. Every final
// event about a charge not yet settled is a job, most of them over in a millisecond (the
// charge's own run settled it meanwhile), and River fetches a queue's jobs at most every
// 100 ms: 25 workers take 250 jobs a second, where the default 5 took 50. The processor
// reads they make stay paced by PAYGATE_RECONCILE_READ_RATE.
const reconcileWorkers = 25

// loadWebhookConfig reads STRIPE_WEBHOOK_SECRET, the signing secret of the processor's events
// (empty: no endpoint, unless the built-in simulator's), and PAYGATE_SIM_WEBHOOKS, whether
// the built-in simulator sends its events to the gateway (on, the default, or off).
func loadWebhookConfig(c *config, getenv func(string) string) error {
	c.WebhookSecret = getenv("STRIPE_WEBHOOK_SECRET")
	if err := checkWebhookSecret("STRIPE_WEBHOOK_SECRET", c.WebhookSecret); err != nil {
		return err
	}
	switch v := getenv("PAYGATE_SIM_WEBHOOKS"); v {
	case "", "on":
		c.SimWebhooks = true
	case "off":
	default:
		return &configError{Var: "PAYGATE_SIM_WEBHOOKS", Msg: `must be "on" or "off"`}
	}
	return nil
}

// checkWebhookSecret refuses a secret that is not a Stripe signing secret (whsec_ and
// printable characters); an empty one is allowed. The secret itself is never printed.
func checkWebhookSecret(name, secret string) error {
	if secret == "" {
		return nil
	}
	if !strings.HasPrefix(secret, "whsec_") || len(secret) < len("whsec_")+8 {
		return &configError{Var: name, Msg: "must be the endpoint's signing secret, whsec_ and at least 8 characters"}
	}
	for i := 0; i < len(secret); i++ {
		if secret[i] <= ' ' || secret[i] > '~' {
			return &configError{Var: name, Msg: "must be printable ASCII without spaces"}
		}
	}
	return nil
}

// checkSimWebhooks checks paygate sim's --webhook-url and --webhook-secret: both or neither,
// an http(s) URL, a signing secret.
func checkSimWebhooks(rawURL, secret string) error {
	switch {
	case rawURL == "" && secret == "":
		return nil
	case rawURL == "":
		return &configError{Var: "--webhook-url", Msg: "is required with --webhook-secret", Exit: exitUsage}
	case secret == "":
		return &configError{Var: "--webhook-secret", Msg: "is required with --webhook-url", Exit: exitUsage}
	}
	if u, err := url.Parse(rawURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &configError{Var: "--webhook-url", Msg: "must be an http:// or https:// URL"}
	}
	return checkWebhookSecret("--webhook-secret", secret)
}

// wireSimWebhooks makes the built-in simulator s send its events to this gateway's
// /webhooks/stripe on api, signed with STRIPE_WEBHOOK_SECRET or, when it is unset, a secret
// generated for this run, which it sets in cfg. Off with PAYGATE_SIM_WEBHOOKS=off.
func wireSimWebhooks(ctx context.Context, cfg *config, s *sim.Server, api net.Addr, log *zap.Logger) error {
	if !cfg.SimWebhooks {
		return nil
	}
	if cfg.WebhookSecret == "" {
		cfg.WebhookSecret = "whsec_" + rand.Text()
	}
	return s.StartWebhooks(ctx, sim.WebhookConfig{URL: "http://" + loopback(api) + webhookPath, Secret: cfg.WebhookSecret})
}

// loopback is addr with an unspecified host (0.0.0.0, ::) replaced by the loopback address,
// so that a process on this machine can reach it.
func loopback(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// newWebhooks returns the receiver of the processor's events on db, with its reaper
// registered on registry; attach it to the queue once that exists.
func newWebhooks(db *store.DB, registry *jobs.Registry, reg prometheus.Registerer, log *zap.Logger) (*reconcile.Webhooks, error) {
	hooks := reconcile.NewWebhooks(db, log)
	if err := hooks.AddReaper(registry); err != nil {
		return nil, err
	}
	return hooks, hooks.RegisterMetrics(reg)
}
