package charge

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// CompleterConfig tunes the completer.
type CompleterConfig struct {
	// Every is how often the completer looks for charges left mid-flight (default 1 s). A
	// look reads the keys whose lock ended since the last one, so the interval sets how the
	// same reads are spread: every 10 s at 1 000 charges a second, one look read 10 000
	// keys with their charges and took both cores for 50 ms.
	Every time.Duration
	// Idle is how long a charge must have stayed processing, its key's lock expired,
	// before the completer takes it over (default 1 min).
	Idle time.Duration
	// Timeout bounds one charge's run (default 8 s, the interactive deadline).
	Timeout time.Duration
	// Batch is how many charges one pass claims, one after another (default 50).
	Batch int
}

func (c CompleterConfig) withDefaults() CompleterConfig {
	if c.Every <= 0 {
		c.Every = time.Second
	}
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

// Completer resumes the charges left processing by a process that died, on a ticker of its
// own: every replica runs one, and the key each charge is claimed by keeps two replicas off
// one charge.
type Completer struct {
	service *Service
	cfg     CompleterConfig
}

// NewCompleter returns the completer of the charges of s.
func NewCompleter(s *Service, cfg CompleterConfig) *Completer {
	return &Completer{service: s, cfg: cfg.withDefaults()}
}

// Run makes a pass every CompleterConfig.Every until ctx ends. A pass that started finishes
// its charges even while the process stops: a resumed charge must end with a stored outcome.
func (c *Completer) Run(ctx context.Context) {
	tick := time.NewTicker(c.cfg.Every)
	defer tick.Stop()
	log := c.service.log
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			n, err := c.Pass(context.WithoutCancel(ctx))
			if err != nil {
				log.Error("completer pass failed", zap.Error(err))
			} else if n > 0 {
				log.Info("completer resumed charges", zap.Int("charges", n))
			}
		}
	}
}

// Pass resumes charges left processing by a process that died: each one through its own
// processor key, inside the 24 h rule, as a run whose earlier attempts may have reached the
// processor — so what it cannot settle becomes pending, for reconciliation, never failed.
// It never touches a charge that already has an outcome. It returns how many charges it
// carried to an outcome.
func (c *Completer) Pass(ctx context.Context) (int, error) {
	s, cfg := c.service, c.cfg
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
		ch := cl.Charge
		s.log.Info("completing a charge left mid-flight", zap.String("charge_id", ch.ID), zap.String("merchant_id", ch.MerchantID))
		r := run{MerchantID: ch.MerchantID, Key: cl.Key, Charge: ch, Now: now, Timeout: cfg.Timeout, Uncertain: true, History: cl.History}
		if _, err := s.carry(ctx, r); err != nil {
			s.log.Error("completing charge failed", zap.String("charge_id", ch.ID), zap.Error(err))
			continue
		}
		done++
	}
	return done, nil
}
