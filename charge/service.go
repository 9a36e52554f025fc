package charge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/idempotency"
	"github.com/paygate/paygate/processor"
)

var (
	// ErrKeyInUse is returned by Create while another request holds the same inbound key.
	ErrKeyInUse = errors.New("charge: idempotency key in use by a request still running")
	// ErrKeyReused is returned by Create for an inbound key first used with another request.
	ErrKeyReused = errors.New("charge: idempotency key reused with another request")
)

// DuplicateReattemptError is returned by Reattempt when a reattempt of the same chain is
// live (processing, pending or succeeded): the declined charge may be paid already.
type DuplicateReattemptError struct {
	ChargeID string
}

// Error names the live reattempt.
func (e *DuplicateReattemptError) Error() string {
	return fmt.Sprintf("charge: reattempt %s of the same declined charge is live", e.ChargeID)
}

// DuplicateReferenceError is returned by Create when a live charge (processing, pending or
// succeeded) of the merchant already carries the request's reference.
type DuplicateReferenceError struct {
	ChargeID string
}

// Error names the live charge holding the reference.
func (e *DuplicateReferenceError) Error() string {
	return fmt.Sprintf("charge: reference already used by live charge %s", e.ChargeID)
}

// cardLookupTimeout bounds the read of a payment method's card before a charge.
const cardLookupTimeout = 1500 * time.Millisecond

// CodeKeyExpired is the failure code of a charge whose processor key can no longer be
// written: a retry came after the processor's key retention.
const CodeKeyExpired = "processor_key_expired"

// CodeAccountChanged is the failure code of a charge recorded at another processor account
// than the one the gateway now talks to: it is never sent, replayed or reconciled there.
const CodeAccountChanged = "processor_account_changed"

// CreateParams is one keyed request for a new charge.
type CreateParams struct {
	MerchantID  string
	Key         string
	Fingerprint idempotency.Fingerprint
	Request     Request
	// Timeout is the caller's remaining deadline (Request-Timeout-Ms); the answer is
	// decided within it.
	Timeout time.Duration
	// id fixes the new charge's id (a scheduled automatic reattempt); empty: a new one.
	id string
}

// Response is an answer to a charge request: an HTTP status and its exact body.
type Response struct {
	Status int
	Body   []byte
	// RetryAfter is, for an answer that asks the caller to retry (a retryable failure),
	// how long to wait first (see Outcome.RetryAfter); zero when nothing is known. A
	// stored answer never carries it.
	RetryAfter time.Duration
	// Replayed reports an answer to a retry of a request already answered: the stored
	// answer, or the charge's current state for a request first answered 202.
	Replayed bool
}

// Renderer turns a charge into the API's answer for it. The engine stores the bytes it
// returns so that a replay is the same answer byte for byte.
type Renderer func(c *Charge) Response

// Runner carries a stored charge to the processor: every attempt under the charge's
// processor key, inside the deadline of ctx. It returns the outcome and the attempts made.
type Runner interface {
	Account() string
	Run(ctx context.Context, c *Charge) Outcome
}

// Outcome is what a run of a charge decided.
type Outcome struct {
	Status       Status
	ProcessorRef string
	Failure      *Failure
	// Evidence is the issuer's evidence of a decline.
	Evidence *processor.Decline
	Attempts []Attempt
	// ProcessorStatus is the status of the PaymentIntent the processor last answered with
	// (requires_action: waiting for the cardholder's authentication, no authorization yet);
	// empty when none came.
	ProcessorStatus string
	// RetryAfter is, for a failed outcome, how long a retry would wait for the processor
	// to take one again: what remains of the Retry-After it sent last, or of an open
	// circuit's pause. Zero when it gave no such hint.
	RetryAfter time.Duration
	// Account, when set, is the processor account the run's requests reached, found to be
	// another than the one the charge was recorded at (the process behind the processor's
	// address changed between the account's last read and the send): the charge is recorded
	// at it, where its key was used.
	Account string
}

// Service is the charge engine.
type Service struct {
	store  Store
	runner Runner
	render Renderer
	cards  Cards
	caps   decline.Caps
	log    *zap.Logger
	now    func() time.Time
	// lockMargin is added to a request's deadline to lock its key: a crashed request's
	// key frees itself after its deadline plus this margin.
	lockMargin time.Duration
	// answerMargin is kept free at the end of the caller's deadline to store and send
	// the answer.
	answerMargin time.Duration
}

// ServiceConfig configures the charge engine.
type ServiceConfig struct {
	Store  Store
	Runner Runner
	Render Renderer
	// Cards reads the card behind a payment method before the first attempt.
	Cards Cards
	// Caps are the card networks' reattempt caps (zero fields: the defaults).
	Caps decline.Caps
	Log  *zap.Logger
	// Now is the clock the engine measures the caller's deadline and a run's duration on
	// (time.Now when nil). What it stores is timed by the database's clock.
	Now func() time.Time
	// LockMargin is added to a request's deadline to lock its inbound key (default 15 s):
	// the key of a request whose process died frees itself after that.
	LockMargin time.Duration
}

// NewService returns the charge engine.
func NewService(cfg ServiceConfig) *Service {
	if cfg.LockMargin <= 0 {
		cfg.LockMargin = 15 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{store: cfg.Store, runner: cfg.Runner, render: cfg.Render, cards: cfg.Cards, caps: cfg.Caps,
		log: cfg.Log, now: cfg.Now, lockMargin: cfg.LockMargin, answerMargin: 150 * time.Millisecond}
}

// Create runs one keyed charge request. It returns the answer to send, or ErrKeyInUse,
// ErrKeyReused, a *DuplicateReferenceError, a *ReattemptRefusedError or a *ValidationError
// (a payment method the processor does not know).
func (s *Service) Create(ctx context.Context, p CreateParams) (Response, error) {
	return s.create(ctx, p, "", "")
}

// create runs a keyed request for a new charge; reattemptOf and chain are set for a
// reattempt of a declined charge.
func (s *Service) create(ctx context.Context, p CreateParams, reattemptOf, chain string) (Response, error) {
	// The caller's deadline runs from here: the card's read and the first phase spend it too.
	start := s.now()
	id := p.id
	if id == "" {
		id = NewID()
	}
	// The card lookup is a read of its own, bounded so that the charge keeps most of the
	// caller's deadline.
	card, err := s.card(ctx, p.Request.PaymentMethod, min(cardLookupTimeout, p.Timeout/3))
	if err != nil {
		return Response{}, err
	}
	// A read of the processor's account (after a failed connection put it in doubt) waits no
	// longer than the caller does: when it cannot finish, the runner sends nothing.
	acctCtx, cancelAcct := context.WithTimeout(ctx, max(p.Timeout-s.answerMargin-s.now().Sub(start), 0))
	defer cancelAcct()
	r := BeginParams{
		MerchantID:  p.MerchantID,
		Key:         p.Key,
		Fingerprint: p.Fingerprint,
		LockFor:     p.Timeout + s.lockMargin,
		Card:        card,
		Caps:        s.caps,
		New: Charge{
			ID:               id,
			MerchantID:       p.MerchantID,
			Amount:           p.Request.Amount,
			Currency:         p.Request.Currency,
			PaymentMethod:    p.Request.PaymentMethod,
			Customer:         p.Request.Customer,
			Reference:        p.Request.Reference,
			Initiator:        p.Request.Initiator,
			ReattemptMode:    p.Request.ReattemptMode,
			ReattemptOf:      reattemptOf,
			Chain:            chain,
			Metadata:         p.Request.Metadata,
			ProcessorKey:     ProcessorKey(id),
			ProcessorAccount: s.accountNow(acctCtx),
		},
	}
	begun, err := Begin(ctx, s.store, r)
	if err != nil {
		return Response{}, fmt.Errorf("charge: begin: %w", err)
	}
	switch begun.Verdict {
	case idempotency.Mismatch:
		return Response{}, ErrKeyReused
	case idempotency.InUse:
		return Response{}, ErrKeyInUse
	case idempotency.Replay:
		if begun.Record.ResponseBody == nil && begun.Charge != nil {
			// A request first answered 202 gets the charge's current state.
			resp := s.render(begun.Charge)
			resp.Replayed = true
			return resp, nil
		}
		return Response{Status: begun.Record.ResponseStatus, Body: begun.Record.ResponseBody, Replayed: true}, nil
	}
	if begun.DuplicateOf != "" {
		return Response{}, &DuplicateReferenceError{ChargeID: begun.DuplicateOf}
	}
	if begun.LiveReattempt != "" {
		return Response{}, &DuplicateReattemptError{ChargeID: begun.LiveReattempt}
	}
	if begun.Refused != nil {
		return Response{}, &ReattemptRefusedError{Verdict: *begun.Refused}
	}
	c := begun.Charge
	if c == nil {
		return Response{}, errors.New("charge: begin returned no charge")
	}
	if c.Status != StatusProcessing {
		// The charge already has an outcome that is not replayed from storage (a pending
		// charge, or one settled since): answer its current state, and free the key. A
		// retryably failed charge whose key can no longer be written fails for good.
		if c.Status == StatusFailed && c.Failure != nil && c.Failure.Retryable {
			switch {
			case !c.keyOpen(begun.Now):
				c.Failure = &Failure{Code: CodeKeyExpired, Retryable: false}
			case s.accountMoved(acctCtx, c.ProcessorAccount):
				c.Failure = &Failure{Code: CodeAccountChanged, Retryable: false}
			}
		}
		resp := s.render(c)
		return resp, s.finish(ctx, FinishParams{MerchantID: p.MerchantID, Key: p.Key, Charge: c}, resp)
	}
	return s.carry(ctx, run{
		MerchantID: p.MerchantID,
		Key:        p.Key,
		Charge:     c,
		Now:        begun.Now,
		Timeout:    p.Timeout - s.now().Sub(start),
		// A charge found processing was left mid-flight by a request that died: it may
		// have reached the processor already.
		Uncertain: !begun.Created && begun.PriorStatus == StatusProcessing,
		History:   begun.History,
	})
}

// card reads the card behind a payment method. A payment method the processor does not know
// is a *ValidationError; one that cannot be read now gives a nil card (see BeginParams.Card).
func (s *Service) card(ctx context.Context, paymentMethod string, wait time.Duration) (*Card, error) {
	if s.cards == nil {
		return nil, errors.New("charge: no card reader configured")
	}
	if cc, ok := s.cards.(CachedCards); ok {
		if pc, ok := cc.CachedCard(paymentMethod); ok {
			return cardOf(pc), nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	pc, err := s.cards.Card(ctx, paymentMethod)
	switch {
	case errors.Is(err, processor.ErrNoSuchPaymentMethod), errors.Is(err, processor.ErrNotCard):
		return nil, &ValidationError{Param: "payment_method", Code: "payment_method_invalid",
			Message: "the processor has no card payment method with this id"}
	case err != nil:
		s.log.Warn("reading the payment method's card failed", zap.Error(err))
		return nil, nil
	}
	return cardOf(pc), nil
}

// cardOf is the card of a processor's payment method.
func cardOf(pc processor.Card) *Card {
	return &Card{Fingerprint: pc.Fingerprint, Network: pc.Network, ExpMonth: int(pc.ExpMonth), ExpYear: int(pc.ExpYear)}
}

// run is a stored charge to carry to an outcome under its processor key (see carry).
type run struct {
	MerchantID string
	Key        string
	Charge     *Charge
	// Now is the database clock of the phase that began the run.
	Now time.Time
	// Timeout is what remains of the caller's deadline.
	Timeout time.Duration
	// Uncertain says that an earlier run may have reached the processor.
	Uncertain bool
	// History is the card's history without the charge's own attempt, for its decline.
	History decline.History
}

// carry runs a stored charge to an outcome under its processor key and stores it.
func (s *Service) carry(ctx context.Context, r run) (Response, error) {
	c := r.Charge
	// The run continues even if the caller hangs up: once a request may reach the
	// processor, its outcome must be stored. Its own deadline is the caller's, and the
	// account's confirmation before it spends the same.
	started := s.now()
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(r.Timeout-s.answerMargin, 0))
	defer cancel()
	expired := !c.keyOpen(r.Now)
	if moved := s.carriedAccountMoved(runCtx, c, r.Now, r.Uncertain); expired || moved {
		return s.unsendable(ctx, r, expired)
	}
	out := s.runner.Run(runCtx, c)
	if r.Uncertain && out.Status == StatusFailed {
		// Nothing this run sent was executed, but an earlier run's request may have been:
		// uncertainty is sticky. That holds for a request the processor refused as invalid
		// too: what it refused is this run's request, not the earlier one.
		out.Status, out.Failure = StatusPending, nil
	}
	c.Status = out.Status
	c.Failure = out.Failure
	reached := out.Account != ""
	if reached {
		s.recordAt(ctx, c, out.Account)
	}
	var network string
	if c.Card != nil {
		network = c.Card.Network
	}
	cl := Classify(out.Evidence, network)
	co := cardOutcome(c.Status, cl, out.ProcessorStatus)
	var next *NextReattempt
	if c.Status == StatusDeclined {
		var v decline.Verdict
		// The card's history records the attempt at now, the database's time of the intent.
		declinedAt := r.Now.Add(s.now().Sub(started))
		c.Decline, v = declineBlock(c, out.Evidence, cl, co, r.History, r.Now, declinedAt, s.caps)
		next = nextReattempt(c, v, declinedAt)
		if next != nil {
			at := next.At.UTC()
			c.NextReattemptAt = &at
		}
	}
	if out.ProcessorRef != "" {
		c.ProcessorRef = out.ProcessorRef
	}
	c.Attempts += len(out.Attempts)
	resp := s.render(c)
	// Storing the outcome must not be cut short by the caller hanging up.
	finishCtx, cancelFinish := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancelFinish()
	fp := FinishParams{MerchantID: r.MerchantID, Key: r.Key, Charge: c, Attempts: out.Attempts, Card: co, Next: next, Moved: reached}
	if c.Status == StatusDeclined {
		fp.Review = s.possibleDuplicate(finishCtx, c, cl.Hold, r.Now)
	}
	if err := s.finish(finishCtx, fp, resp); err != nil {
		if errors.Is(err, ErrSettled) {
			// This run stalled past its key's lock and the charge was settled without it:
			// the answer is the charge as settled.
			if cur, gerr := s.store.Charge(finishCtx, r.MerchantID, c.ID); gerr == nil {
				return s.render(cur), nil
			}
		}
		return Response{}, err
	}
	if c.Status == StatusFailed {
		resp.RetryAfter = out.RetryAfter
	}
	return resp, nil
}

// possibleDuplicate returns the review charge c, declined with hold at at, enters: for a
// possible duplicate, the queue with the earlier payments on its card that may be its
// order's first; nil for any other decline.
func (s *Service) possibleDuplicate(ctx context.Context, c *Charge, hold decline.Hold, at time.Time) *Review {
	q := PossibleDuplicateQuery(c, hold, at)
	if q == nil {
		return PossibleDuplicate(c, hold, nil, false)
	}
	earlier, err := s.store.Payments(ctx, *q)
	if err != nil {
		s.log.Warn("a possible duplicate's earlier payments could not be read: it goes to review without them",
			zap.String("charge_id", c.ID), zap.Error(err))
	}
	return PossibleDuplicate(c, hold, earlier, err == nil)
}

// unsendable ends a run that may send nothing under the charge's key: the processor's key
// retention is ending (expired), or the charge belongs to another processor account than the
// one configured now. A charge that may have been sent stays pending for reconciliation
// (which reads only the charge's own account); one that never reached the processor fails
// for good (a new charge needs a new key).
func (s *Service) unsendable(ctx context.Context, r run, expired bool) (Response, error) {
	c := r.Charge
	code := CodeKeyExpired
	if !expired {
		code = CodeAccountChanged
	}
	if r.Uncertain {
		c.Status, c.Failure = StatusPending, nil
	} else {
		c.Status, c.Failure = StatusFailed, &Failure{Code: code, Retryable: false}
	}
	s.log.Warn("charge not sent", zap.String("charge_id", c.ID), zap.String("failure_code", code),
		zap.String("processor_account", c.ProcessorAccount), zap.String("status", string(c.Status)))
	resp := s.render(c)
	return resp, s.finish(ctx, FinishParams{MerchantID: r.MerchantID, Key: r.Key, Charge: c}, resp)
}

// recordAt re-records charge c at the processor account its run's requests reached.
func (s *Service) recordAt(ctx context.Context, c *Charge, account string) {
	s.log.Warn("charge sent to another processor account than the one recorded: recorded at the one it reached",
		zap.String("charge_id", c.ID), zap.String("processor_account", c.ProcessorAccount), zap.String("reached_account", account))
	c.ProcessorAccount = account
	// A card's fingerprint is the account's: its history goes under the one the card has
	// there (the card cache was emptied when the account changed). Unread, it stays.
	if c.Card != nil {
		if card, err := s.card(context.WithoutCancel(ctx), c.PaymentMethod, min(cardLookupTimeout, 500*time.Millisecond)); err == nil && card != nil {
			c.Card = card
		}
	}
}

// finish stores the outcome fp.Charge came to, answered with resp: the response is stored
// for replay unless it is a 202 (its replay renders the current state) or a retryable
// failure (a retry runs again, and the key is freed).
func (s *Service) finish(ctx context.Context, fp FinishParams, resp Response) error {
	c := fp.Charge
	if c.Failure != nil {
		fp.Reason = c.Failure.Code
	}
	switch {
	case c.Status == StatusPending || c.Status == StatusProcessing:
		fp.ResponseStatus = resp.Status
	case c.Status == StatusFailed && c.Failure != nil && c.Failure.Retryable:
		fp.ReleaseKey = true // a retry runs the same operation again
	default:
		fp.ResponseStatus, fp.ResponseBody = resp.Status, resp.Body
	}
	if err := s.store.FinishCharge(ctx, fp); err != nil {
		if errors.Is(err, ErrSettled) {
			s.log.Warn("a late run's outcome was not stored: the charge was settled meanwhile",
				zap.String("charge_id", c.ID), zap.String("status", string(c.Status)))
			return fmt.Errorf("charge: finish %s: %w", c.ID, err)
		}
		s.log.Error("storing charge outcome failed", zap.String("charge_id", c.ID), zap.String("status", string(c.Status)), zap.Error(err))
		return fmt.Errorf("charge: finish %s: %w", c.ID, err)
	}
	return nil
}

// Get returns a merchant's charge with its attempts, or ErrNotFound.
func (s *Service) Get(ctx context.Context, merchantID, id string) (*Charge, error) {
	return s.store.Charge(ctx, merchantID, id)
}

// List returns a page of a merchant's charges, newest first, and whether more follow.
func (s *Service) List(ctx context.Context, p ListParams) ([]Charge, bool, error) {
	return s.store.Charges(ctx, p)
}
