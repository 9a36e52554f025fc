package main

import (
	"context"

	"go.uber.org/zap"

	"github.com/paygate/paygate/api"
	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/report"
	"github.com/paygate/paygate/store"
)

// standbyReads serves the reads that tolerate a standby's lag, the review queue and the
// reattempt report, from PAYGATE_READ_DATABASE_URL, and everything else from the primary:
// a charge's trail and chain are read beside the charge itself, which comes from the
// primary, and a resolution writes. A read the standby cannot serve now (it is down, or
// promoted and restarting) is served by the primary instead.
type standbyReads struct {
	*store.DB // the primary
	standby   *store.DB
	log       *zap.Logger
}

var (
	_ api.Review   = (*standbyReads)(nil)
	_ report.Store = (*standbyReads)(nil)
)

// openReads returns what reports and review lists read from: the primary alone when
// PAYGATE_READ_DATABASE_URL is unset, and a close function. A read URL it cannot reach is a
// *configError naming it.
func openReads(ctx context.Context, cfg config, primary *store.DB, log *zap.Logger) (*standbyReads, func(), error) {
	r := &standbyReads{DB: primary, log: log}
	if cfg.ReadDatabaseURL == "" {
		return r, func() {}, nil
	}
	standby, err := store.Open(ctx, cfg.ReadDatabaseURL, store.Config{MaxConns: max(2, cfg.DBMaxConns/4)})
	if err != nil {
		return nil, nil, &configError{Var: "PAYGATE_READ_DATABASE_URL", Msg: "cannot reach the database: " + err.Error()}
	}
	r.standby = standby
	return r, standby.Close, nil
}

// fromStandby runs read on the standby, and on the primary when the standby cannot be
// reached (or there is none).
func fromStandby[T any](r *standbyReads, what string, read func(*store.DB) (T, error)) (T, error) {
	if r.standby != nil {
		v, err := read(r.standby)
		if err == nil || !store.Unavailable(err) {
			return v, err
		}
		r.log.Warn("the read database cannot be reached: reading from the primary", zap.String("read", what), zap.Error(err))
	}
	return read(r.DB)
}

// ReviewQueue reads the review queue from the standby.
func (r *standbyReads) ReviewQueue(ctx context.Context, merchantID string, limit int) ([]reconcile.ReviewItem, error) {
	return fromStandby(r, "review_queue", func(db *store.DB) ([]reconcile.ReviewItem, error) {
		return db.ReviewQueue(ctx, merchantID, limit)
	})
}

// ReattemptCards reads the reattempt report's cards from the standby.
func (r *standbyReads) ReattemptCards(ctx context.Context, q report.Query) ([]report.Card, error) {
	return fromStandby(r, "reattempt_report", func(db *store.DB) ([]report.Card, error) {
		return db.ReattemptCards(ctx, q)
	})
}
