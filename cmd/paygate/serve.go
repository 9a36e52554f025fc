package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v76"
)

// keyCacheTTL is how long an authenticated key is remembered: a revoked key stops working
// within it on every replica.
const keyCacheTTL = 10 * time.Second

// simSecretKey is the key the gateway presents to its built-in simulator.
const simSecretKey = "sk_test_paygate_simulator"

// serveHooks lets whole-program tests learn the addresses a server bound.
type serveHooks struct {
	listening func(apiAddr, simAddr, metricsAddr string)
}

// serveUsage is the command line of serve.
const serveUsage = "usage: paygate serve, configured through the environment: see README"

// runServe runs the gateway until ctx ends. It binds every listener it needs (PAYGATE_ADDR,
// PAYGATE_SIM_ADDR with the built-in simulator, PAYGATE_METRICS_ADDR) before it starts any
// work, so that an address it cannot use is the only line it prints. A configuration it
// cannot use is a *configError naming the variable; unexpected arguments a *usageError.
func runServe(ctx context.Context, args []string, stderr io.Writer, getenv func(string) string, hooks *serveHooks) error {
	if len(args) != 0 {
		return &usageError{fmt.Sprintf("serve takes no arguments, got %q (%s)", args[0], serveUsage)}
	}
	cfg, err := loadConfig(getenv, true)
	if err != nil {
		return err
	}
	if err := checkServe(cfg, getenv); err != nil {
		return err
	}
	lns, err := listen(cfg)
	if err != nil {
		return err
	}
	// Each listener is closed when its server stops; closing it again here is harmless and
	// frees it on every early return.
	defer lns.close()
	log := newLogger(cfg.LogLevel, stderr)
	defer log.Sync() //nolint:errcheck

	a := newApp(cfg, lns, log)
	if err := a.Run(ctx); err != nil {
		_ = a.Close()
		return err
	}
	if hooks != nil && hooks.listening != nil {
		hooks.listening(lns.api.Addr().String(), a.simAddr(), lns.metrics.Addr().String())
	}
	select {
	case err := <-a.Failed():
		_ = a.Close()
		return err
	case <-ctx.Done():
	}
	return a.Close()
}

// listeners are the addresses serve binds before it starts any work.
type listeners struct {
	api     net.Listener // PAYGATE_ADDR
	sim     net.Listener // PAYGATE_SIM_ADDR, with the built-in simulator; nil otherwise
	metrics net.Listener // PAYGATE_METRICS_ADDR
}

// listen binds the listeners of cfg. It returns a *configError naming the variable of an
// address that cannot be bound (in use, or not an address of this machine), having closed
// the ones it bound.
func listen(cfg config) (*listeners, error) {
	l := &listeners{}
	for _, b := range []struct {
		name, addr string
		dst        *net.Listener
		want       bool
	}{
		{"PAYGATE_ADDR", cfg.Addr, &l.api, true},
		{"PAYGATE_SIM_ADDR", cfg.SimAddr, &l.sim, cfg.Processor == "sim"},
		{"PAYGATE_METRICS_ADDR", cfg.MetricsAddr, &l.metrics, true},
	} {
		if !b.want {
			continue
		}
		ln, err := net.Listen("tcp", b.addr)
		if err != nil {
			l.close()
			return nil, &configError{Var: b.name, Msg: fmt.Sprintf("cannot listen on %s: %v", b.addr, listenReason(err))}
		}
		*b.dst = ln
	}
	return l, nil
}

// listenReason is the system's reason a bind failed, without the "listen tcp ADDR:" the
// message around it already says.
func listenReason(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

func (l *listeners) close() {
	for _, ln := range []net.Listener{l.api, l.sim, l.metrics} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// processorError names the variable most likely at fault when the processor cannot be used
// at start-up: STRIPE_SECRET_KEY when it refused the key (401, or 403 for a key without
// access), STRIPE_API_BASE when it cannot be reached or does not answer as Stripe does
// (PAYGATE_SIM_ADDR for the built-in simulator). The key never appears in the message.
func processorError(cfg config, err error) error {
	if cfg.Processor == "sim" {
		return &configError{Var: "PAYGATE_SIM_ADDR", Msg: fmt.Sprintf("the built-in processor simulator does not answer: %v", err)}
	}
	base := redactURL(cfg.StripeAPIBase)
	if base == "" {
		base = stripe.APIURL + " (the default)"
	}
	var (
		se  *stripe.Error
		ue  *url.Error
		msg string
	)
	switch {
	case errors.As(err, &se) && (se.HTTPStatusCode == http.StatusUnauthorized || se.HTTPStatusCode == http.StatusForbidden):
		return &configError{Var: "STRIPE_SECRET_KEY", Msg: fmt.Sprintf("the processor at %s refused the key (HTTP %d): %s",
			base, se.HTTPStatusCode, hideKey(se.Msg, cfg.StripeKey))}
	case errors.As(err, &se):
		msg = fmt.Sprintf("the processor at %s answered HTTP %d: %s", base, se.HTTPStatusCode, se.Msg)
	case errors.As(err, &ue):
		msg = fmt.Sprintf("cannot reach the processor at %s: %v", base, ue.Err)
	default:
		msg = fmt.Sprintf("the processor at %s does not answer as a Stripe API does: %v", base, err)
	}
	return &configError{Var: "STRIPE_API_BASE", Msg: hideKey(msg, cfg.StripeKey)}
}

// redactURL returns raw with the password of its user information replaced, so that an
// error naming the processor's address never prints a secret.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}

// hideKey removes the secret key from a message, should a processor echo it.
func hideKey(msg, key string) string {
	if key == "" {
		return msg
	}
	return strings.ReplaceAll(msg, key, "[redacted]")
}
