// Command paygate is the payments outcome-reconciliation gateway: its HTTP server and
// workers (serve), its migrations (migrate), its API keys (keys), the processor simulator
// (sim) and the retry-policy simulator (simulate).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
