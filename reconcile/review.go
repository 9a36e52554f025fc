package reconcile

import (
	"encoding/json"
	"time"

	"github.com/paygate/paygate/charge"
)

// ReviewItem is a charge waiting for a person in the review queue, with why and the evidence
// gathered so far.
type ReviewItem struct {
	Charge *charge.Charge
	Reason string
	// Rank orders the queue: 1 first (processor evidence contradicting a manual resolution,
	// a second payment for one order), then the oldest charge first.
	Rank  int
	Since time.Time
	// Evidence is the last reconciliation check's record, or the evidence the charge entered
	// review with when no check put it there (a possible duplicate payment).
	Evidence json.RawMessage
	// Checks are all the charge's reconciliation checks, oldest first.
	Checks []json.RawMessage
}

// State is a charge's reconciliation state and checks, as operators and auditors see it.
type State struct {
	NextCheckAt   *time.Time        `json:"next_check_at"`
	InReview      bool              `json:"in_review"`
	ReviewReason  string            `json:"review_reason,omitempty"`
	ManualOutcome string            `json:"manual_outcome,omitempty"`
	Checks        []json.RawMessage `json:"checks"`
}

// Stats is the state of reconciliation across all merchants, for the metrics.
type Stats struct {
	Pending       int
	OldestPending time.Duration // age of the oldest pending charge; 0 when none
	InReview      int
	// EventsInReview counts the processor events waiting in review: they name a charge
	// paygate does not have.
	EventsInReview int
}
