package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/event"
	"github.com/paygate/paygate/jobs"
	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/store"
)

// keyRetention is how long an inbound idempotency key is kept after its charge reached a
// final state: at least the 24 h the contract promises.
const keyRetention = 25 * time.Hour

// readiness is ready when the store and the job queue's schema are.
type readiness struct{ db *store.DB }

func (r readiness) Ready(ctx context.Context) error {
	if err := r.db.Ready(ctx); err != nil {
		return err
	}
	return jobs.Current(ctx, r.db.Pool())
}

// replayGuard decides whether a dead letter may be replayed. Every kind paygate runs is safe
// to run again: a reconciliation check or sweep only reads; an automatic reattempt resumes under its
// own inbound key, its charge is admitted again by the network caps if it does not exist
// yet, and no write happens under a processor key past the 24 h rule (the charge engine
// enforces it on every path); a delivery of an event posts it again, which receivers dedupe
// by its id. A kind this binary does not know is refused.
func replayGuard(_ context.Context, kind string, _ json.RawMessage) error {
	switch kind {
	case reconcile.CheckArgs{}.Kind(), reconcile.SweepArgs{}.Kind(), reconcile.AccountSweepArgs{}.Kind(), reconcile.EventArgs{}.Kind(),
		reconcile.WebhookReaperArgs{}.Kind(), charge.AutoReattemptArgs{}.Kind(),
		charge.AutoSweepArgs{}.Kind(), jobs.KeyReaperArgs{}.Kind(), event.DeliveryArgs{}.Kind():
		return nil
	}
	return fmt.Errorf("unknown job kind %q", kind)
}
