package charge

import (
	"context"
	"errors"
	"time"

	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/idempotency"
)

// Store is what the charge engine needs from the store of record. Each method is one
// transaction; none is open while the processor is called.
type Store interface {
	// BeginCharge is the first atomic phase of a keyed request: it binds the inbound key to
	// the request's fingerprint (or checks it), takes the key's lock, and creates the charge
	// with its processor key when the key has none yet.
	BeginCharge(ctx context.Context, p BeginParams) (Begun, error)
	// FinishCharge is the last atomic phase: it stores the outcome, the attempts and, when
	// the answer is final, the response replayed for the key; and it releases the key's lock.
	FinishCharge(ctx context.Context, p FinishParams) error
	// Charge returns a merchant's charge with its attempts, or ErrNotFound.
	Charge(ctx context.Context, merchantID, id string) (*Charge, error)
	// Charges returns a page of a merchant's charges, newest first.
	Charges(ctx context.Context, p ListParams) ([]Charge, bool, error)
	// ClaimStuck locks the keys of up to limit charges left processing by requests that
	// died (lock expired, unchanged for longer than idle) for lockFor, and returns them
	// with the database clock.
	ClaimStuck(ctx context.Context, idle, lockFor time.Duration, limit int) ([]Claim, time.Time, error)
}

// Claim is a charge left mid-flight, with the inbound key whose lock the completer holds.
type Claim struct {
	Key    string
	Charge *Charge
	// History is the card's history without the charge's own attempt, for its decline.
	History decline.History
}

// ErrNotFound is returned for a charge that does not exist or belongs to another merchant.
var ErrNotFound = errors.New("charge: not found")

// ErrSettled is returned by Store.FinishCharge when the charge was settled without the run
// that finishes: its outcome came too late and is not stored (see the service's carry).
var ErrSettled = errors.New("charge: settled meanwhile")

// BeginParams are the inputs of Store.BeginCharge.
type BeginParams struct {
	MerchantID  string
	Key         string
	Fingerprint idempotency.Fingerprint
	// LockFor is how long the key stays locked if this request dies without finishing.
	LockFor time.Duration
	// New is the charge to create when the key has none.
	New Charge
	// Card is New's card; nil when it could not be read now: a new charge is then stored
	// failed (CodeCardUnavailable, retryable) without any attempt, and a retryably failed
	// charge is not reopened.
	Card *Card
	// Admit decides, under the card's lock and on the database clock, whether the card's
	// history at the processor account allows one more attempt now.
	Admit func(h decline.History, now time.Time) decline.Verdict
}

// Begun is what Store.BeginCharge found or did.
type Begun struct {
	Verdict idempotency.Verdict
	Record  idempotency.Record
	// Charge is the key's charge (just created, or the one a previous request created);
	// nil when the key has none.
	Charge *Charge
	// Created is true when this call created Charge.
	Created bool
	// DuplicateOf names the live charge that already carries the request's reference; the
	// key is bound but no charge was created.
	DuplicateOf string
	// LiveReattempt names the live reattempt of the same chain that refused a new (or
	// retried) reattempt: nothing was created or changed.
	LiveReattempt string
	// Now is the database clock when the phase ran.
	Now time.Time
	// PriorStatus is the status the key's existing charge had before this request: a
	// charge found processing was left mid-flight by a request that died.
	PriorStatus Status
	// Refused is the network rules' refusal: the key is bound, no charge was created (or a
	// failed charge was not reopened).
	Refused *decline.Verdict
	// History is the card's history the admission decided on: nil when there was none, or
	// when it held nothing but approvals, which change no verdict of the network rules.
	History decline.History
}

// FinishParams are the inputs of Store.FinishCharge.
type FinishParams struct {
	MerchantID string
	Key        string
	Charge     *Charge   // the charge with its new status, failure, decline, processor_ref
	Attempts   []Attempt // attempts made by this request, appended to the charge's
	// ResponseStatus and ResponseBody are stored for replay when ResponseStatus is not 0.
	// A 202 is stored without a body: its replay renders the charge's current state.
	ResponseStatus int
	ResponseBody   []byte
	// Card is what the outcome means for the card's history; nil leaves it unchanged.
	Card *CardOutcome
	// Actor and Reason go to the charge's audit trail with the change of state.
	Actor  string
	Reason string
	// Next is the next step of an automatic reattempt chain, persisted with the decline.
	Next *NextReattempt
	// Moved says the charge was re-recorded at the processor account its request reached
	// (Charge.ProcessorAccount) with its card as read there (Charge.Card): the card's
	// history moves with it.
	Moved bool
}

// NextReattempt is the next step of an automatic reattempt chain: the reattempt's charge id,
// fixed before anything runs, and when the schedule allows it.
type NextReattempt struct {
	ChargeID string
	At       time.Time
}

// ListParams select a page of charges.
type ListParams struct {
	MerchantID    string
	Status        Status // empty for all
	Limit         int
	StartingAfter string // a charge id: the page starts after it
}
