package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"

	"go.uber.org/zap"

	"github.com/paygate/paygate/internal/sim"
)

// simUsage is the command line of sim.
const simUsage = "usage: paygate sim [--addr HOST:PORT] [--account ACCT] [--keep N] [--webhook-url URL --webhook-secret whsec_...]"

// runSim runs the processor simulator alone, until ctx ends.
func runSim(ctx context.Context, args []string, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", orDefault(getenv("PAYGATE_SIM_ADDR"), "127.0.0.1:12111"), "HOST:PORT to listen on")
	account := fs.String("account", "", "processor account id to answer (default: a new random acct_sim...)")
	keep := fs.Int("keep", sim.DefaultMaxPaymentIntents,
		"how many PaymentIntents, idempotency keys and ledger entries to keep; the oldest go first")
	hookURL := fs.String("webhook-url", "", "where to POST a signed event for every PaymentIntent created or changed")
	hookSecret := fs.String("webhook-secret", "", "the signing secret of the events (whsec_...), the gateway's STRIPE_WEBHOOK_SECRET")
	if err := fs.Parse(args); err != nil {
		return &usageError{fmt.Sprintf("sim: %v (%s)", err, simUsage)}
	}
	if fs.NArg() != 0 {
		return &usageError{fmt.Sprintf("sim takes no arguments besides its flags, got %q (%s)", fs.Arg(0), simUsage)}
	}
	if *keep < 1 {
		return &configError{Var: "--keep", Msg: fmt.Sprintf("must be at least 1, got %d", *keep)}
	}
	if err := checkSimWebhooks(*hookURL, *hookSecret); err != nil {
		return err
	}
	// A bad address is named as the caller gave it: the flag, or the variable behind its default.
	source := "--addr"
	addrSet := false
	fs.Visit(func(f *flag.Flag) { addrSet = addrSet || f.Name == "addr" })
	if !addrSet && getenv("PAYGATE_SIM_ADDR") != "" {
		source = "PAYGATE_SIM_ADDR"
	}
	if err := checkAddr(source, *addr); err != nil {
		return err
	}
	log := newLogger(orDefault(getenv("PAYGATE_LOG_LEVEL"), "info"), stderr)
	defer log.Sync() //nolint:errcheck
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return &configError{Var: source, Msg: fmt.Sprintf("cannot listen on %s: %v", *addr, listenReason(err))}
	}
	s := sim.New(sim.Config{AccountID: *account, Logger: log.Named("sim"),
		MaxPaymentIntents: *keep, MaxIdempotencyKeys: *keep, MaxLedgerEntries: *keep})
	if *hookURL != "" {
		if err := s.StartWebhooks(ctx, sim.WebhookConfig{URL: *hookURL, Secret: *hookSecret}); err != nil {
			return &configError{Var: "--webhook-url", Msg: err.Error()}
		}
	}
	log.Info("processor simulator serving", zap.String("addr", ln.Addr().String()), zap.String("account", s.AccountID()),
		zap.String("webhook_url", *hookURL))
	return s.Serve(ctx, ln)
}
