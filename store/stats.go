package store

import (
	"context"
	"fmt"
	"time"

	"github.com/paygate/paygate/reconcile"
)

// ReconcileStats counts pending charges, the age of the oldest, the review queue, and the
// processor events waiting in review.
func (db *DB) ReconcileStats(ctx context.Context) (reconcile.Stats, error) {
	var s reconcile.Stats
	var oldest float64
	err := db.pool.QueryRow(ctx, `
		WITH pending AS (
			-- A pending charge is in reconciliation: its next check is scheduled, or it waits in
			-- review (each found by its partial index).
			SELECT c.created_at FROM reconciliations r JOIN charges c ON c.id = r.charge_id
			 WHERE (r.next_check_at IS NOT NULL OR r.in_review) AND c.status = 'pending'
		)
		SELECT (SELECT count(*) FROM pending),
		       COALESCE((SELECT extract(epoch FROM clock_timestamp() - min(created_at)) FROM pending), 0),
		       (SELECT count(*) FROM reconciliations WHERE in_review),
		       (SELECT count(*) FROM webhook_events WHERE in_review)`).Scan(&s.Pending, &oldest, &s.InReview, &s.EventsInReview)
	if err != nil {
		return s, fmt.Errorf("store: reconcile stats: %w", err)
	}
	s.OldestPending = time.Duration(oldest * float64(time.Second))
	return s, nil
}
