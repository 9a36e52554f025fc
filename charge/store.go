package charge

import (
	"context"
	"errors"
	"time"

	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/idempotency"
)

// Store is what the charge engine needs from the store of record. Each method is one
// transaction; none is open while the processor is called. The engine decides, the store
// applies: every rule (the key's verdict, the 24 h rule, the network rules, reopening) is
// decided here, in package charge, over what the store read.
type Store interface {
	// Create is the first phase of a request whose key is new, for a card with no refusal
	// on record (see CardState.Clean): it writes the key with the charge in one statement,
	// under the card's lock. It returns the database clock of the writes, or ErrNotApplied,
	// having written nothing, when the key exists, the card has a refusal on record or the
	// charge's reference is live on another charge: Begin then decides on what is there.
	Create(ctx context.Context, c Creation) (time.Time, error)
	// Begin is the first phase of any other request: under the card's lock and the key's, it
	// reads the request's Snapshot, asks decide for the plan and applies it, in one
	// transaction. decide is pure; it may be called more than once (a race lost on a unique
	// key runs the transaction again, and a plan may ask for the card's whole history).
	Begin(ctx context.Context, q SnapshotQuery, decide func(Snapshot) (Plan, error)) (Plan, error)
	// FinishCharge is the last phase: it stores the outcome, the attempts and, when the
	// answer is final, the response replayed for the key.
	FinishCharge(ctx context.Context, p FinishParams) error
	// Charge returns a merchant's charge with its attempts, or ErrNotFound.
	Charge(ctx context.Context, merchantID, id string) (*Charge, error)
	// Charges returns a page of a merchant's charges, newest first.
	Charges(ctx context.Context, p ListParams) ([]Charge, bool, error)
	// ClaimStuck locks the keys of up to limit charges left processing by requests that
	// died (lock expired, unchanged for longer than idle) for lockFor, and returns them
	// with the database clock.
	ClaimStuck(ctx context.Context, idle, lockFor time.Duration, limit int) ([]Claim, time.Time, error)
	// Payments returns the charges q names, newest first: the earlier payments on a card a
	// possible duplicate's review names (see PossibleDuplicate).
	Payments(ctx context.Context, q PaymentsQuery) ([]Payment, error)
}

// ErrNotApplied is returned by Store.Create when the creation's assumptions do not hold.
var ErrNotApplied = errors.New("charge: the creation's assumptions do not hold")

// Creation is a new charge with its new inbound key, planned on the assumption that the key
// is new and the card has no refusal on record: the network rules then allow the attempt
// (Verdict), and it is no reattempt, so no decision is recorded.
type Creation struct {
	Charge      *Charge // its card set; CreatedAt is set by Create
	Key         string
	Fingerprint idempotency.Fingerprint
	LockFor     time.Duration
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

// SnapshotQuery names what Store.Begin reads.
type SnapshotQuery struct {
	MerchantID string
	Key        string
	// Fingerprint is the request's: a new key is bound to it.
	Fingerprint idempotency.Fingerprint
	// Account and Card name the card whose lock is taken and whose state is read: the card
	// of the request's payment method at the account a new charge is recorded at. Card nil:
	// none (it could not be read).
	Account string
	Card    *Card
	// Chain is the reattempt chain of a reattempt (its root charge), empty for an original:
	// its attempts on the card and its live reattempt are read.
	Chain string
	// Reference is the request's reference: the live charge holding it is read.
	Reference string
	// FullHistory asks for the card's whole history instead of its state's recent part.
	FullHistory bool
}

// Snapshot is what Store.Begin read for a request, under the card's lock and the key's.
type Snapshot struct {
	// Now is the database clock.
	Now time.Time
	// Key is the key's record; nil when the key is new. Its ResponseStatus and ResponseBody
	// are the stored answer of its charge.
	Key *idempotency.Record
	// Charge is the key's charge; nil when the key names none.
	Charge *Charge
	// Card is the state of the query's card at its account.
	Card CardState
	// LiveReference is the live charge (processing, pending or succeeded), other than
	// Charge, that holds the query's reference; empty when none.
	LiveReference string
	// LiveReattempt is the live reattempt of the query's chain, other than Charge; empty
	// when none.
	LiveReattempt string
}

// CardState is what the network rules need of a card at a processor account.
type CardState struct {
	// Clean reports that the card has no refusal (decline or processor block) on record:
	// its history holds only approvals and unknown outcomes, on which the rules refuse
	// nothing and count nothing. Its other fields are then empty.
	Clean bool
	// Compact is the part of the history up to Through that the rules can still need
	// (decline.Compact); Recent the attempts after it, in time order; Chain the attempts
	// of the query's chain on the card, wherever they are. With FullHistory, or for a
	// state marked Stale, Compact is empty and Recent is the whole history.
	Compact decline.History
	Through decline.Checkpoint
	Recent  decline.History
	Chain   decline.History
	// Stale reports that an attempt up to Through changed since Compact was written: only
	// the whole history tells the rules' state.
	Stale bool
	// Version is the state's version, for a compare-and-set of its next write.
	Version int64
	// Full reports that Recent is the whole history.
	Full bool
}

// Plan is what the first phase decided on a Snapshot: the writes Store.Begin applies, and
// what the engine does next.
type Plan struct {
	// Verdict is the key's: Proceed, Replay, InUse or Mismatch.
	Verdict idempotency.Verdict
	// Record is the key's record as the request found it (Replay answers from it).
	Record idempotency.Record
	// Charge is the key's charge after the plan: created, reopened, resumed or as found.
	Charge *Charge
	// Created reports that the plan creates Charge (CreateCharge).
	Created bool
	// PriorStatus is the status the key's charge had before this request: a charge found
	// processing was left mid-flight by a request that died.
	PriorStatus Status
	// DuplicateOf names the live charge that holds the request's reference: no charge was
	// created or reopened.
	DuplicateOf string
	// LiveReattempt names the live reattempt of the same chain that refused this one:
	// nothing is written.
	LiveReattempt string
	// Refused is the network rules' refusal: no charge was created or reopened.
	Refused *decline.Verdict
	// History is the card's history the rules decided on (without Charge's own attempt),
	// for its decline later; nil for a card with no refusal on record.
	History decline.History
	// NeedFullHistory asks Begin to read the card's whole history and decide again.
	NeedFullHistory bool
	// Now is the database clock the plan was decided on.
	Now time.Time

	// The writes, in the order Begin applies them.
	Writes Writes
}

// Writes are the rows a first phase writes.
type Writes struct {
	// InsertKey writes the request's new key, naming KeyCharge (empty: none), locked until
	// LockUntil (nil: free).
	InsertKey bool
	// LockKey locks the existing key until LockUntil (nil: frees it) and names KeyCharge
	// on it (empty: none).
	LockKey   bool
	KeyCharge string
	LockUntil *time.Time
	// CreateCharge inserts Plan.Charge, with its card attempt pending at Plan.Now when it
	// has a card; CreatedEvent writes its creation to the audit trail (a charge not created
	// processing: its derived creation event says processing).
	CreateCharge bool
	CreatedEvent bool
	// RecordCard records Plan.Charge's card on it (it had none).
	RecordCard bool
	// Reopen puts Plan.Charge, retryably failed, back to processing, its card attempt
	// pending at Plan.Now.
	Reopen bool
	// Decision is a reattempt decision of the network rules to record.
	Decision *Decision
	// CardState is the card's new state (after Snapshot.Card.Version); nil: unchanged.
	CardState *CardStateWrite
}

// Decision is one decision of the network rules on a card, for the audit report.
type Decision struct {
	At          time.Time
	Account     string
	Card        Card
	MerchantID  string
	ChargeID    string // the charge admitted; empty when refused
	Chain       string
	ReattemptOf string
	Verdict     decline.Verdict
}

// CardStateWrite is a card's new network-rules state: Compact up to Through.
type CardStateWrite struct {
	Account     string
	Fingerprint string
	Compact     decline.History
	Through     decline.Checkpoint
	// Version is the version the state was read at: the write applies only to it.
	Version int64
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
	// ReleaseKey frees the key's lock: the answer is not stored (a retryable failure), so
	// a retry runs the same operation again at once.
	ReleaseKey bool
	// Card is what the outcome means for the card's history; nil leaves it unchanged. A
	// refusal (decline.Outcome.Refusal) puts the card on record.
	Card *CardOutcome
	// Reason goes to the charge's audit trail with the change of state.
	Reason string
	// Next is the next step of an automatic reattempt chain, persisted with the decline.
	Next *NextReattempt
	// Moved says the charge was re-recorded at the processor account its request reached
	// (Charge.ProcessorAccount) with its card as read there (Charge.Card): the card's
	// history moves with it.
	Moved bool
	// Review puts the charge in the review queue with its outcome (see PossibleDuplicate);
	// nil: none.
	Review *Review
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
