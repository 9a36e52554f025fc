package processor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// ErrAccountUnconfirmed is returned by an AccountWatch that cannot read the processor's
// account now: nothing may be sent or read under an existing charge's key until it can.
var ErrAccountUnconfirmed = errors.New("processor: the processor account cannot be confirmed now")

// AccountReader reads the id of the processor account the secret key belongs to (a *Client).
type AccountReader interface {
	Account(ctx context.Context) (string, error)
}

// WatchConfig tunes an AccountWatch. Zero fields take the defaults.
type WatchConfig struct {
	// Every is how often Run reads the account (default 30 s).
	Every time.Duration
	// Fresh is how recent a successful read must be for Confirm to answer without a read
	// of its own (default 2 s).
	Fresh time.Duration
	// Wait is how long Current, the hot path, waits for the read of a stale watch before it
	// gives up (default 2 s).
	Wait time.Duration
	// Timeout bounds one read, whoever waits for it (default DefaultReadTimeout).
	Timeout time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Log receives a line when the account changes or cannot be read.
	Log *zap.Logger
	// OnChange, when set, is called after a read found another account than the last one
	// (what depends on the account, such as cached card fingerprints, is dropped).
	OnChange func()
}

func (c WatchConfig) withDefaults() WatchConfig {
	if c.Every <= 0 {
		c.Every = 30 * time.Second
	}
	if c.Fresh <= 0 {
		c.Fresh = 2 * time.Second
	}
	if c.Wait <= 0 {
		c.Wait = 2 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultReadTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = zap.NewNop()
	}
	return c
}

// AccountWatch knows which processor account the gateway talks to now. The processor behind
// the API base may change account while paygate runs (a simulator restarted with a new one):
// the account read once at start-up would then be recorded on new charges and trusted for
// old ones. The watch reads GET /v1/account again every WatchConfig.Every (Run), and
// whenever a request to the processor failed without an answer (MarkStale, called by the
// Client for a refused, reset or closed connection): a stale watch reads again, briefly, on
// its next use. A read that fails keeps the last account known, and the watch stale.
//
// Current is the cheap read of the hot path (an atomic load unless the watch is stale);
// Confirm is for a request under an existing charge's key, which must go to the account the
// charge was recorded at: it reads again unless a read succeeded within WatchConfig.Fresh.
// Concurrent reads share one request. It is safe for concurrent use.
type AccountWatch struct {
	reader AccountReader
	cfg    WatchConfig

	id    atomic.Pointer[string]
	stale atomic.Bool

	mu      sync.Mutex
	doubts  uint64    // how often MarkStale was called: a read clears staleness only if none came meanwhile
	readAt  time.Time // when the last successful read started
	failing bool      // the last read failed (its failure was logged)
	flight  *accountRead
}

// accountRead is one read of the account that concurrent callers share.
type accountRead struct {
	done chan struct{}
	id   string
	err  error
}

// NewAccountWatch returns a watch of the account reader talks to, which was last read as
// initial (serve reads it at start-up, and refuses to start without it).
func NewAccountWatch(reader AccountReader, initial string, cfg WatchConfig) *AccountWatch {
	w := &AccountWatch{reader: reader, cfg: cfg.withDefaults()}
	w.id.Store(&initial)
	w.readAt = w.cfg.Now()
	return w
}

// Last returns the account last read, without reading.
func (w *AccountWatch) Last() string { return *w.id.Load() }

// Stale reports whether something put the account in doubt since the last successful read.
func (w *AccountWatch) Stale() bool { return w.stale.Load() }

// MarkStale puts the account in doubt: the next Current or Confirm reads it again. The
// Client calls it for every request that failed without an answer.
func (w *AccountWatch) MarkStale() {
	w.mu.Lock()
	w.doubts++
	w.stale.Store(true)
	w.mu.Unlock()
}

// Current returns the account the gateway talks to: the last one read, or, when the watch is
// stale, the one a new read returns within WatchConfig.Wait. A new charge is recorded at it.
// It returns an error wrapping ErrAccountUnconfirmed when that read fails or takes longer;
// Last still has the last account known.
func (w *AccountWatch) Current(ctx context.Context) (string, error) {
	if !w.stale.Load() {
		return w.Last(), nil
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Wait)
	defer cancel()
	return w.Refresh(ctx)
}

// Confirm returns the account the processor states now: the last one read when a read
// succeeded within WatchConfig.Fresh and nothing put it in doubt since, else a new read's.
// Every request under an existing charge's key is preceded by it. It returns an error
// wrapping ErrAccountUnconfirmed when the read fails: then nothing may be sent.
func (w *AccountWatch) Confirm(ctx context.Context) (string, error) {
	if !w.stale.Load() {
		w.mu.Lock()
		fresh := w.cfg.Now().Sub(w.readAt) < w.cfg.Fresh
		w.mu.Unlock()
		if fresh {
			return w.Last(), nil
		}
	}
	return w.Refresh(ctx)
}

// Refresh reads the account now (joining a read already in flight) and returns it. A read
// that fails leaves the watch stale and the last account in place; so does a read that ctx
// gives up on, until it completes. Its error wraps ErrAccountUnconfirmed.
func (w *AccountWatch) Refresh(ctx context.Context) (string, error) {
	w.mu.Lock()
	f := w.flight
	if f == nil {
		f = &accountRead{done: make(chan struct{})}
		w.flight = f
		// The read is the watch's, not the caller's: a caller that gives up does not fail
		// the others waiting for it. WatchConfig.Timeout bounds it.
		go w.read(f, w.doubts)
	}
	w.mu.Unlock()
	select {
	case <-f.done:
		return f.id, f.err
	case <-ctx.Done():
		// This caller could not wait for the read: until it completes, the next use waits
		// for it too rather than trust the account it is confirming.
		w.mu.Lock()
		if w.flight == f {
			w.stale.Store(true)
		}
		w.mu.Unlock()
		return "", fmt.Errorf("%w: %w", ErrAccountUnconfirmed, ctx.Err())
	}
}

// read makes one read of the account for f; doubts is the count of MarkStale calls when it
// started.
func (w *AccountWatch) read(f *accountRead, doubts uint64) {
	started := w.cfg.Now()
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Timeout)
	id, err := w.reader.Account(ctx)
	cancel()
	if err == nil && id == "" {
		err = errors.New("processor: account: empty id")
	}
	changed := false
	w.mu.Lock()
	logFailure := err != nil && !w.failing
	w.failing = err != nil
	if err != nil {
		w.stale.Store(true)
		f.err = fmt.Errorf("%w: %w", ErrAccountUnconfirmed, err)
	} else {
		prev := w.Last()
		w.id.Store(&id)
		w.readAt = started
		if w.doubts == doubts {
			// Nothing failed since the read started: its answer is the account now.
			w.stale.Store(false)
		}
		f.id = id
		changed = prev != id
		if changed {
			w.cfg.Log.Warn("the processor account changed: new charges are recorded at the new one, and charges of the old one are never sent, replayed or reconciled there",
				zap.String("previous_account", prev), zap.String("processor_account", id))
		}
	}
	w.flight = nil
	w.mu.Unlock()
	if changed && w.cfg.OnChange != nil {
		w.cfg.OnChange()
	}
	switch {
	case logFailure:
		w.cfg.Log.Warn("reading the processor account failed: nothing is sent under an existing charge's key until it succeeds",
			zap.Error(redactErr(err)))
	case err != nil:
		w.cfg.Log.Debug("reading the processor account failed again", zap.Error(redactErr(err)))
	}
	close(f.done)
}

// Run reads the account every WatchConfig.Every until ctx ends. A failed read is logged and
// leaves the watch stale.
func (w *AccountWatch) Run(ctx context.Context) {
	t := time.NewTicker(w.cfg.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = w.Refresh(ctx)
		}
	}
}
