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

func runKeys(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	if len(args) == 0 {
		return &usageError{"keys needs a subcommand: create, list or revoke"}
	}
	cfg, err := loadConfig(getenv, true)
	if err != nil {
		return err
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("keys "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	merchant := fs.String("merchant", "", "merchant id")
	role := fs.String("role", "", "checkout, operator or auditor")
	if err := fs.Parse(args); err != nil {
		return &usageError{err.Error()}
	}
	db, err := store.Open(ctx, cfg.DatabaseURL, store.Config{MaxConns: 2})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Ready(ctx); err != nil {
		return err
	}
	switch sub {
	case "create":
		if !merchantRE.MatchString(*merchant) {
			return &usageError{"keys create needs --merchant of 1 to 64 letters, digits, '_', '.' or '-'"}
		}
		r, err := apikey.ParseRole(*role)
		if err != nil {
			return &usageError{"keys create needs --role checkout, operator or auditor"}
		}
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
		if fs.NArg() != 1 {
			return &usageError{"keys revoke takes one key id"}
		}
		err := db.RevokeKey(ctx, fs.Arg(0))
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("paygate: no key with id %q", fs.Arg(0))
		}
		if err == nil {
			fmt.Fprintf(stdout, "revoked %s\n", fs.Arg(0))
		}
		return err
	}
	return &usageError{fmt.Sprintf("unknown keys subcommand %q", sub)}
}
