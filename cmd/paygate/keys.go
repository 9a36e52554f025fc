package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"text/tabwriter"
	"time"

	"github.com/paygate/paygate/apikey"
	"github.com/paygate/paygate/store"
)

var merchantRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// keysCommands is the command line of keys without a valid subcommand.
const keysCommands = "usage: paygate keys create|list|revoke ..."

// keysUsage is the command line of each keys subcommand.
var keysUsage = map[string]string{
	"create": "usage: paygate keys create --merchant M --role checkout|operator|auditor",
	"list":   "usage: paygate keys list [--merchant M]",
	"revoke": "usage: paygate keys revoke ID",
}

// runKeys runs "paygate keys create|list|revoke". A command line it cannot use (an unknown
// subcommand, a flag the subcommand does not take, an argument it does not expect) is a
// *usageError with the subcommand's usage, refused before the database is opened.
func runKeys(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	sub, args, usage, err := subcommand("keys", args, keysUsage, keysCommands, "create, list or revoke")
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("keys "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var merchant, role *string
	if sub == "create" || sub == "list" {
		merchant = fs.String("merchant", "", "merchant id")
	}
	if sub == "create" {
		role = fs.String("role", "", "checkout, operator or auditor")
	}
	wantArgs := 0
	if sub == "revoke" {
		wantArgs = 1
	}
	if err := parseSubcommand(fs, "keys "+sub, args, wantArgs, "a key id", usage); err != nil {
		return err
	}
	var r apikey.Role
	if sub == "create" {
		if !merchantRE.MatchString(*merchant) {
			return &usageError{"keys create needs --merchant of 1 to 64 letters, digits, '_', '.' or '-' (" + usage + ")"}
		}
		var err error
		if r, err = apikey.ParseRole(*role); err != nil {
			return &usageError{"keys create needs --role checkout, operator or auditor (" + usage + ")"}
		}
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
	switch sub {
	case "create":
		k, err := apikey.Generate()
		if err != nil {
			return err
		}
		if err := db.CreateKey(ctx, *merchant, r, k); err != nil {
			return err
		}
		// The key alone on one line: it is shown once and never stored.
		fmt.Fprintln(stdout, k.Secret)
		return nil
	case "list":
		keys, err := db.ListKeys(ctx, *merchant)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tMERCHANT\tROLE\tCREATED\tREVOKED")
		for _, k := range keys {
			revoked := "-"
			if k.RevokedAt != nil {
				revoked = k.RevokedAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.ID, k.MerchantID, k.Role, k.CreatedAt.UTC().Format(time.RFC3339), revoked)
		}
		return tw.Flush()
	case "revoke":
		err := db.RevokeKey(ctx, fs.Arg(0))
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("paygate: no key with id %q", fs.Arg(0))
		}
		if err == nil {
			fmt.Fprintf(stdout, "revoked %s\n", fs.Arg(0))
		}
		return err
	}
	// Unreachable: keysUsage names the subcommands handled above.
	return fmt.Errorf("paygate: keys %s: not implemented", sub)
}
