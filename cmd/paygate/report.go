package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/report"
)

// newReports returns the report service on st, with the network caps of cfg: the API and
// the command line build the same reports.
func newReports(st report.Store, cfg config) *report.Service {
	return report.New(report.Config{Store: st, Caps: decline.Caps{VisaReattempts30d: cfg.VisaReattempts30d}, Now: time.Now})
}

// runReport prints a report to stdout:
//
//	paygate report reattempts [--from RFC3339] [--to RFC3339] [--format csv|json] [--merchant M]
//
// Without --merchant the report covers every card of every merchant.
func runReport(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	if len(args) == 0 || args[0] != "reattempts" {
		return &usageError{"report needs a report name: reattempts"}
	}
	fs := flag.NewFlagSet("report reattempts", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	from := fs.String("from", "", "start of the period, RFC 3339 (default: 30 days before --to)")
	to := fs.String("to", "", "end of the period, RFC 3339 (default: now)")
	format := fs.String("format", "csv", "csv or json")
	merchant := fs.String("merchant", "", "only the cards this merchant touched")
	if err := fs.Parse(args[1:]); err != nil {
		return &usageError{"report reattempts: " + err.Error()}
	}
	if fs.NArg() != 0 {
		return &usageError{"report reattempts takes no arguments besides its flags"}
	}
	if *format != "csv" && *format != "json" {
		return &usageError{"report reattempts: --format must be csv or json"}
	}
	if *merchant != "" && !merchantRE.MatchString(*merchant) {
		return &usageError{"report reattempts: --merchant must be 1 to 64 letters, digits, '_', '.' or '-'"}
	}
	q := report.Query{Merchant: *merchant}
	for _, f := range []struct {
		name, value string
		t           *time.Time
	}{{"from", *from, &q.From}, {"to", *to, &q.To}} {
		if f.value == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, f.value)
		if err != nil {
			return &usageError{fmt.Sprintf("report reattempts: --%s must be an RFC 3339 time, such as 2026-01-31T00:00:00Z", f.name)}
		}
		*f.t = t
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
	reads, closeReads, err := openReads(ctx, cfg, db, zap.NewNop())
	if err != nil {
		return err
	}
	defer closeReads()
	rep, err := newReports(reads, cfg).Reattempts(ctx, q)
	var qe *report.QueryError
	if errors.As(err, &qe) {
		return &usageError{fmt.Sprintf("report reattempts: --%s: %s", qe.Param, qe.Msg)}
	}
	if err != nil {
		return err
	}
	if *format == "json" {
		return report.WriteJSON(stdout, rep)
	}
	return report.WriteCSV(stdout, rep)
}
