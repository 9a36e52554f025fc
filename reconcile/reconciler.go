package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/processor"
)

// Defaults of a Config's zero fields.
const (
	// DefaultReadRate is Stripe's live-mode read limit, requests per second.
	DefaultReadRate rate.Limit = 100
	// DefaultSearchRate is Stripe's live-mode search limit, requests per second.
	DefaultSearchRate rate.Limit = 20
	// DefaultListPageSize is the page size of the list (the processor's largest).
	DefaultListPageSize = 100
	// DefaultMaxListPages bounds the pages read for one window; a window with more is
	// read incompletely (and can never prove an absence).
	DefaultMaxListPages = 100
	// DefaultCallTimeout bounds each processor call.
	DefaultCallTimeout = 10 * time.Second
)

// Config configures a Reconciler.
type Config struct {
	// Accounts confirms the processor account Reads talk to, before each check's reads and
	// again before its decision; nil: Account, fixed. A charge recorded at another account
	// is never queried: it goes to review.
	Accounts Accounts
	// Account is the processor account Reads talk to, when Accounts is nil.
	Account string
	// Reads are the processor reads (a *processor.Client).
	Reads Reads
	// Store records the checks and their decisions.
	Store Store
	// Replayer, when set, replays a charge's key when the reads found nothing and
	// CanReplay allows it. Nil: reads only.
	Replayer Replayer
	// Now is the database clock (time.Now when nil).
	Now func() time.Time
	// ReadLimiter paces retrieve and list calls; SearchLimiter paces search calls. Share
	// them between the reconcilers of a process. Nil: DefaultReadRate and
	// DefaultSearchRate for this Reconciler alone.
	ReadLimiter   *rate.Limiter
	SearchLimiter *rate.Limiter
	// Policy holds the schedule and the windows of the decision.
	Policy Policy
	// ListPageSize and MaxListPages shape the list scan (DefaultListPageSize,
	// DefaultMaxListPages when zero).
	ListPageSize int
	MaxListPages int
	// CallTimeout bounds each processor call (DefaultCallTimeout when zero).
	CallTimeout time.Duration
	// Caps are the card networks' reattempt caps a decline found is judged under (zero
	// fields: the defaults).
	Caps decline.Caps
	// Log receives one line per decision.
	Log *zap.Logger
}

// Reconciler runs the reconciliation of one charge at a time: reads first, then a decision,
// then its record. It is safe for concurrent use; the limiters pace all its calls.
type Reconciler struct {
	account      string // the fixed account of the Config, empty with Accounts
	accounts     Accounts
	reads        Reads
	store        Store
	replayer     Replayer
	now          func() time.Time
	readLimit    *rate.Limiter
	searchLimit  *rate.Limiter
	policy       Policy
	listPageSize int
	maxListPages int
	readTimeout  time.Duration
	caps         decline.Caps
	log          *zap.Logger
}

// New returns a Reconciler. It returns an error when the account, the reads or the store is
// missing or the policy is invalid.
func New(cfg Config) (*Reconciler, error) {
	switch {
	case cfg.Account == "" && cfg.Accounts == nil:
		return nil, errors.New("reconcile: a processor account is required")
	case cfg.Reads == nil:
		return nil, errors.New("reconcile: processor reads are required")
	case cfg.Store == nil:
		return nil, errors.New("reconcile: a store is required")
	}
	if err := cfg.Policy.Validate(); err != nil {
		return nil, err
	}
	r := &Reconciler{
		account:      cfg.Account,
		accounts:     cfg.Accounts,
		reads:        cfg.Reads,
		store:        cfg.Store,
		replayer:     cfg.Replayer,
		now:          cfg.Now,
		readLimit:    cfg.ReadLimiter,
		searchLimit:  cfg.SearchLimiter,
		policy:       cfg.Policy.withDefaults(),
		listPageSize: cfg.ListPageSize,
		maxListPages: cfg.MaxListPages,
		readTimeout:  cfg.CallTimeout,
		caps:         cfg.Caps,
		log:          cfg.Log,
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.accounts == nil {
		r.accounts = fixedAccount(cfg.Account)
	}
	if r.readLimit == nil {
		r.readLimit = rate.NewLimiter(DefaultReadRate, int(DefaultReadRate)/10)
	}
	if r.searchLimit == nil {
		r.searchLimit = rate.NewLimiter(DefaultSearchRate, int(DefaultSearchRate)/10)
	}
	if r.listPageSize <= 0 {
		r.listPageSize = DefaultListPageSize
	}
	if r.maxListPages <= 0 {
		r.maxListPages = DefaultMaxListPages
	}
	if r.readTimeout <= 0 {
		r.readTimeout = DefaultCallTimeout
	}
	if r.log == nil {
		r.log = zap.NewNop()
	}
	return r, nil
}

// Account returns the fixed processor account of the Config; empty when the account is
// confirmed through Config.Accounts at every check.
func (r *Reconciler) Account() string { return r.account }

// Reconcile runs one check of charge c: it reads what the processor has (not for a charge of
// another account), replays the key when a Replayer is set, nothing was found and CanReplay
// allows it, decides (Decide), records the check through the Store, and returns it.
//
// The processor account is confirmed (Config.Accounts) before the reads, and again before
// the decision: the check is decided against the account its reads went to, and a charge of
// another account is neither read nor replayed there.
//
// It returns an error, and records nothing, when ctx ends, a limiter refuses to wait within
// ctx's deadline, or the account cannot be confirmed or changed during the check
// (processor.ErrAccountUnconfirmed); failed reads are evidence, not errors. A Store error is returned
// wrapped with the check: errors.Is(err, ErrStale) means another reconciler recorded this
// check first.
func (r *Reconciler) Reconcile(ctx context.Context, c Charge) (Check, error) {
	now := r.now()
	chk := Check{N: c.nextCheckNumber(), At: now, Manual: c.Manual}
	account, err := r.confirm(ctx)
	if err != nil {
		return Check{}, fmt.Errorf("reconcile: charge %s: %w", c.ID, err)
	}
	if c.Account != account {
		return r.conclude(ctx, c, chk, Evidence{At: now, Account: account})
	}
	ev, err := r.gather(ctx, c, account, now)
	if err != nil {
		return Check{}, err
	}
	return r.conclude(ctx, c, chk, ev)
}

// conclude ends a check of charge c whose reads at ev.Account (the charge's, or another) are
// in ev: it replays the key when Reconcile would, confirms that the account did not change
// during the reads, decides, records the check and returns it.
func (r *Reconciler) conclude(ctx context.Context, c Charge, chk Check, ev Evidence) (Check, error) {
	if c.Account == ev.Account {
		if ans := r.replay(ctx, c, ev); ans != nil {
			ev.Replay = ans
		}
		// The reads may have taken a while: what they found is evidence only if they went
		// to the charge's account throughout.
		after, err := r.confirm(ctx)
		if err != nil {
			return Check{}, fmt.Errorf("reconcile: charge %s: after the reads: %w", c.ID, err)
		}
		if after != ev.Account {
			return Check{}, fmt.Errorf("reconcile: charge %s: %w: it changed from %s to %s during the check",
				c.ID, processor.ErrAccountUnconfirmed, ev.Account, after)
		}
	}
	chk.Evidence = ev
	chk.Decision = Decide(c, ev, r.policy)
	if err := r.record(ctx, c, chk); err != nil {
		return chk, fmt.Errorf("reconcile: charge %s: record check %d: %w", c.ID, chk.N, err)
	}
	r.logDecision(c, chk)
	return chk, nil
}

// replay sends the charge's request again under its key when a Replayer is set, the reads
// found no PaymentIntent for it, and CanReplay allows it at the database clock now; the
// call's deadline is at the latest the key's closing. It returns nil when it sent nothing.
func (r *Reconciler) replay(ctx context.Context, c Charge, ev Evidence) *ReplayAnswer {
	if r.replayer == nil || ev.sawPaymentIntent(c.ID) || (ev.Retrieve != nil && ev.Retrieve.NotFound) {
		return nil
	}
	now := r.now()
	v := CanReplay(c, ev.Account, now)
	if !v.Allowed {
		return nil
	}
	// A replay is a write under the charge's key: only to the account confirmed now.
	if account, err := r.confirm(ctx); err != nil || account != ev.Account {
		r.log.Warn("replay not sent: the processor account is not confirmed as the charge's",
			zap.String("charge_id", c.ID), zap.String("processor_account", c.Account),
			zap.String("current_account", account), zap.Error(err))
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, min(r.readTimeout, v.Until.Sub(now)))
	defer cancel()
	return ReplayAnswerOf(r.replayer.Replay(rctx, c.ID))
}

// record hands the check to the store, which records it as PlanCheck decides on the
// charge's standing.
func (r *Reconciler) record(ctx context.Context, c Charge, chk Check) error {
	d := chk.Decision
	q := StandingQuery{ChargeID: c.ID, CardHistory: d.Kind == KindResolve && d.Outcome == OutcomeDeclined}
	return r.store.RecordCheck(ctx, q, func(s Standing) (CheckPlan, error) { return PlanCheck(chk, s, r.caps) })
}

// wait takes one token of l, within ctx.
func (r *Reconciler) wait(ctx context.Context, l *rate.Limiter, op string) error {
	if err := l.Wait(ctx); err != nil {
		return fmt.Errorf("reconcile: %s: waiting for the processor rate: %w", op, err)
	}
	return nil
}

func (r *Reconciler) logDecision(c Charge, chk Check) {
	d := chk.Decision
	fields := []zap.Field{
		zap.String("charge_id", c.ID), zap.Int("check", chk.N), zap.String("kind", string(d.Kind)),
		zap.String("path", string(d.Path)), zap.String("payment_intent", d.PaymentIntent),
	}
	switch d.Kind {
	case KindResolve:
		r.log.Info("charge reconciled", append(fields, zap.String("outcome", string(d.Outcome)))...)
	case KindReview:
		r.log.Warn("charge needs review", append(fields, zap.String("reason", string(d.Reason)),
			zap.Time("next_check_at", d.NextCheckAt))...)
	default:
		r.log.Debug("charge still pending", append(fields, zap.Time("next_check_at", d.NextCheckAt))...)
	}
}
