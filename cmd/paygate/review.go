package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/store"
)

// reviewUsage is the command line of each review subcommand.
var reviewUsage = map[string]string{
	"events": "usage: paygate review events [--limit N] [--json]",
	"ack":    "usage: paygate review ack EVENT_ID",
}

// reviewCommands is the command line of review without a valid subcommand.
const reviewCommands = "usage: paygate review events|ack ..."

// runReview runs "paygate review events|ack": the processor events waiting in review, which
// name a charge paygate does not have, so that no merchant's review queue holds them. events
// lists them, oldest first (--json: one event a line, as received); ack takes one out of
// review once a person has looked (its id is then kept as long as any other).
func runReview(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	sub, args, usage, err := subcommand("review", args, reviewUsage, reviewCommands, "events or ack")
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("review "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var limit *int
	var asJSON *bool
	if sub == "events" {
		limit = fs.Int("limit", 100, "at most this many events, 1 to 10000")
		asJSON = fs.Bool("json", false, "one event a line, as received")
	}
	wantArgs := 0
	if sub == "ack" {
		wantArgs = 1
	}
	if err := parseSubcommand(fs, "review "+sub, args, wantArgs, "an event id", usage); err != nil {
		return err
	}
	if limit != nil && (*limit < 1 || *limit > 10000) {
		return &usageError{fmt.Sprintf("review events: --limit must be 1 to 10000 (%s)", usage)}
	}
	cfg, err := loadConfig(getenv, true)
	if err != nil {
		return err
	}
	db, err := openReady(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	if sub == "ack" {
		err := db.AcknowledgeWebhookEvent(ctx, fs.Arg(0))
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("paygate: no event %q waiting in review", fs.Arg(0))
		}
		if err == nil {
			fmt.Fprintf(stdout, "acknowledged %s\n", fs.Arg(0))
		}
		return err
	}
	events, err := db.WebhookEventsInReview(ctx, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, e := range events {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EVENT\tTYPE\tRECEIVED\tACCOUNT\tCHARGE\tPAYMENT_INTENT\tAMOUNT\tSTATUS")
	for _, e := range events {
		var ev reconcile.Event
		_ = json.Unmarshal(e.Event, &ev) // a row without its event shows its ids alone
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Type, e.ReceivedAt.UTC().Format(time.RFC3339),
			dash(e.Account), dash(e.ChargeID), dash(e.PaymentIntent), amount(ev), dash(ev.Intent.Status))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// amount is the event's PaymentIntent amount in minor units with its currency.
func amount(e reconcile.Event) string {
	if e.Intent.Currency == "" {
		return "-"
	}
	return fmt.Sprintf("%d %s", e.Intent.Amount, e.Intent.Currency)
}
