package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/paygate/paygate/internal/policysim"
)

const usage = `usage: paygate COMMAND [ARGS]

commands:
  serve                      the gateway: API and background workers
  migrate                    apply database migrations and exit
  keys create --merchant M --role checkout|operator|auditor
                             create an API key and print it once
  keys list [--merchant M]   list keys (never their secrets)
  keys revoke ID             revoke a key
  review events [--limit N] [--json]
                             the processor events waiting in review: they name no charge here
  review ack EVENT_ID        take an event out of review once a person has looked
  report reattempts [--from T] [--to T] [--format csv|json] [--merchant M]
                             the reattempt audit report (RFC 3339 times; default the last 30 days)
  simulate FILE [--json] [--seed N] [--svg OUT]
                             the retry-policy simulator: the retry loop on a fake clock
  sim [--addr HOST:PORT] [--account ACCT]
                             the processor simulator alone (Stripe wire format)

Configuration is read from the environment: see README.
`

// exitUsage is the exit status of a command line or input that cannot be used.
const exitUsage = 2

// Run runs the paygate command line and returns the process exit status.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "serve":
		err = runServe(ctx, args[1:], stderr, getenv, nil)
	case "migrate":
		err = runMigrate(ctx, args[1:], stdout, getenv)
	case "keys":
		err = runKeys(ctx, args[1:], stdout, getenv)
	case "report":
		err = runReport(ctx, args[1:], stdout, getenv)
	case "review":
		err = runReview(ctx, args[1:], stdout, getenv)
	case "sim":
		err = runSim(ctx, args[1:], stderr, getenv)
	case "simulate":
		return policysim.Main(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "paygate: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, redactPassword(oneLine(databaseError(err)), getenv("DATABASE_URL")))
	var (
		ue *usageError
		ce *configError
	)
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &ce) && ce.Exit != 0:
		return ce.Exit
	}
	return 1
}

// usageError is a command line that cannot be used.
type usageError struct{ msg string }

func (e *usageError) Error() string { return "paygate: " + e.msg }

// subcommand splits args into the subcommand of command cmd and its arguments, with the
// subcommand's usage from usages; commands lists them all and names them in words ("events
// or ack").
func subcommand(cmd string, args []string, usages map[string]string, commands, names string) (sub string, rest []string, usage string, err error) {
	if len(args) == 0 {
		return "", nil, "", &usageError{fmt.Sprintf("%s needs a subcommand: %s (%s)", cmd, names, commands)}
	}
	sub, rest = args[0], args[1:]
	usage, ok := usages[sub]
	if !ok {
		return "", nil, "", &usageError{fmt.Sprintf("unknown %s subcommand %q: want %s (%s)", cmd, sub, names, commands)}
	}
	return sub, rest, usage, nil
}

// parseSubcommand parses the flags of subcommand name ("keys revoke") from args, which must
// then hold exactly want arguments; missing names the one a short line lacks ("a key id").
func parseSubcommand(fs *flag.FlagSet, name string, args []string, want int, missing, usage string) error {
	if err := fs.Parse(args); err != nil {
		return &usageError{fmt.Sprintf("%s: %v (%s)", name, err, usage)}
	}
	switch {
	case fs.NArg() > want:
		return &usageError{fmt.Sprintf("%s: unexpected argument %q (%s)", name, fs.Arg(want), usage)}
	case fs.NArg() < want:
		return &usageError{fmt.Sprintf("%s: needs %s (%s)", name, missing, usage)}
	}
	return nil
}

// oneLine returns the message of err on one line: the lines of a multi-line message (pgx
// puts the reason a connection failed on the lines after the first) joined, not cut.
func oneLine(err error) string {
	var b strings.Builder
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if b.Len() > 0 {
			if prev := b.String(); strings.HasSuffix(prev, ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(line)
	}
	return b.String()
}

// databaseError names DATABASE_URL in an error that says the database it points to cannot
// be used: a connection string pgx cannot parse, or a database it cannot connect to.
func databaseError(err error) error {
	var (
		parse   *pgconn.ParseConfigError
		connect *pgconn.ConnectError
	)
	if (errors.As(err, &parse) || errors.As(err, &connect)) && !strings.Contains(err.Error(), "DATABASE_URL") {
		return fmt.Errorf("paygate: DATABASE_URL: %w", err)
	}
	return err
}

// redactPassword replaces the password of the database URL in msg, as given and as
// escaped in the URL, whatever library wrote msg.
func redactPassword(msg, dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil || u.User == nil {
		return msg
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, pw, "xxxxx")
	if _, escaped, found := strings.Cut(u.User.String(), ":"); found && escaped != "" {
		msg = strings.ReplaceAll(msg, escaped, "xxxxx")
	}
	return msg
}

// newLogger returns the JSON logger of the process, writing to w.
func newLogger(level string, w io.Writer) *zap.Logger {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		lvl = zapcore.InfoLevel
	}
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "ts"
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(w), lvl)
	return zap.New(core)
}
