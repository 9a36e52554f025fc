package charge

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// CompleterConfig tunes the completer.
type CompleterConfig struct {
	// Idle is how long a charge must have stayed processing, its key's lock expired,
	// before the completer takes it over (default 1 min).
	Idle time.Duration
	// Timeout bounds one charge's run (default 8 s, the interactive deadline).
	Timeout time.Duration
	// Batch is how many charges one pass claims, one after another (default 50).
	Batch int
}

func (c CompleterConfig) withDefaults() CompleterConfig {
	if c.Idle <= 0 {
		c.Idle = time.Minute
	}
	if c.Timeout <= 0 {
		c.Timeout = 8 * time.Second
	}
	if c.Batch <= 0 {
		c.Batch = 50
	}
	return c
}

// Complete resumes charges left processing by a process that died: each one through its own
// processor key, inside the 24 h rule, as a run whose earlier attempts may have reached the
// processor — so what it cannot settle becomes pending, for reconciliation, never failed.
// It never touches a charge
// that already has an outcome. It returns how many charges it carried to an outcome.
//
// Several replicas may run it at once: a charge is claimed by locking its key.
func (s *Service) Complete(ctx context.Context, cfg CompleterConfig) (int, error) {
	cfg = cfg.withDefaults()
	done := 0
	// One claim at a time: a key's lock covers the run that follows its claim, and the 24 h
	// rule is judged on the database clock of that claim, however long the pass takes.
	for range cfg.Batch {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		claims, now, err := s.store.ClaimStuck(ctx, cfg.Idle, cfg.Timeout+s.lockMargin, 1)
		if err != nil {
			return done, fmt.Errorf("charge: claim stuck charges: %w", err)
		}
		if len(claims) == 0 {
			break
		}
		cl := claims[0]
		c := cl.Charge
		s.log.Info("completing a charge left mid-flight", zap.String("charge_id", c.ID), zap.String("merchant_id", c.MerchantID))
		if _, err := s.carry(ctx, c.MerchantID, cl.Key, c, now, cfg.Timeout, true, cl.History); err != nil {
			s.log.Error("completing charge failed", zap.String("charge_id", c.ID), zap.Error(err))
			continue
		}
		done++
	}
	return done, nil
}
