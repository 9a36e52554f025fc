package main

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/store"
)

// keyRetention is how long an inbound idempotency key is kept after its charge reached a
// final state: at least the 24 h the contract promises.
const keyRetention = 25 * time.Hour

// startWorkers runs the background work of serve until ctx ends: the completer of charges
// left mid-flight and the reaper of expired idempotency keys. Every replica runs them; the
// store's row locks keep two replicas off one charge. The returned channel closes when they
// have stopped.
func startWorkers(ctx context.Context, log *zap.Logger, cfg config, charges *charge.Service, db *store.DB) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		complete := time.NewTicker(cfg.CompleterInterval)
		defer complete.Stop()
		reap := time.NewTicker(time.Hour)
		defer reap.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-complete.C:
				// A pass that started finishes its charges even while the process stops:
				// a resumed charge must end with a stored outcome.
				n, err := charges.Complete(context.WithoutCancel(ctx), charge.CompleterConfig{Idle: cfg.CompleterIdle})
				if err != nil {
					log.Error("completer pass failed", zap.Error(err))
				} else if n > 0 {
					log.Info("completer resumed charges", zap.Int("charges", n))
				}
			case <-reap.C:
				n, err := db.ReapKeys(ctx, keyRetention)
				if err != nil {
					log.Error("reaping idempotency keys failed", zap.Error(err))
				} else if n > 0 {
					log.Info("reaped idempotency keys", zap.Int64("keys", n))
				}
			}
		}
	}()
	return done
}
