package charge

import (
	"encoding/json"
	"time"

	"github.com/paygate/paygate/internal/randid"
	"github.com/paygate/paygate/processor"
)

// Status is where a charge stands.
type Status string

// The statuses of a charge.
const (
	// StatusProcessing: the charge is being carried to the processor now.
	StatusProcessing Status = "processing"
	// StatusSucceeded: the processor approved the charge.
	StatusSucceeded Status = "succeeded"
	// StatusDeclined: the issuer declined the charge; the decline says whether and when a
	// reattempt is allowed.
	StatusDeclined Status = "declined"
	// StatusPending: an attempt may have reached the processor and no answer settled it;
	// reconciliation resolves it by reading what the processor has.
	StatusPending Status = "pending"
	// StatusFailed: no attempt can have reached the processor, or the processor refused the
	// request as invalid.
	StatusFailed Status = "failed"
)

// Final reports whether the status is an outcome that never changes by itself.
func (s Status) Final() bool {
	return s == StatusSucceeded || s == StatusDeclined || s == StatusFailed
}

// Initiator says who started a charge.
type Initiator string

// The initiators of a charge.
const (
	// InitiatorCustomer: the cardholder is present (checkout).
	InitiatorCustomer Initiator = "customer"
	// InitiatorMerchant: the merchant charges a saved card the cardholder agreed to
	// (subscriptions); requires a customer.
	InitiatorMerchant Initiator = "merchant"
)

// ReattemptMode says who runs the decline schedule of a merchant-initiated charge.
type ReattemptMode string

// The reattempt modes.
const (
	// ReattemptManual: the merchant calls the reattempt endpoint itself.
	ReattemptManual ReattemptMode = "manual"
	// ReattemptAuto: paygate runs the decline schedule.
	ReattemptAuto ReattemptMode = "auto"
)

// Charge is one logical charge operation.
type Charge struct {
	ID            string
	MerchantID    string
	Amount        int64 // minor units
	Currency      string
	PaymentMethod string
	Customer      string
	Reference     string
	Initiator     Initiator
	ReattemptMode ReattemptMode
	ReattemptOf   string
	// Chain is the first charge of the reattempt chain (the charge's own id for an original).
	Chain string
	Card  *Card // the card behind PaymentMethod, known before the first attempt
	// CardAt is when the card's history records the charge's attempt (its admission); nil
	// when the history holds no attempt of it.
	CardAt           *time.Time
	Metadata         map[string]string
	Status           Status
	ProcessorKey     string // the processor idempotency key, "pg_" + ID
	ProcessorAccount string
	ProcessorRef     string // the PaymentIntent id once known
	Failure          *Failure
	Decline          json.RawMessage // the decline block of the API, for a declined charge
	Attempts         int
	IdempotencyKey   string // the inbound key that created it
	FirstSentAt      *time.Time
	CreatedAt        time.Time
	UpdatedAt        time.Time
	AttemptsDetail   []Attempt
	// NextReattemptAt is when the next step of an automatic reattempt chain is due.
	NextReattemptAt *time.Time
	// ReferenceDuplicateOf names the live charge that held this charge's reference when the
	// processor's evidence brought this one back to life: two payments for one order.
	ReferenceDuplicateOf string
	// ReattemptDuplicateOf names the live charge of this charge's reattempt chain when the
	// processor's evidence brought this one back to life: two payments for one order.
	ReattemptDuplicateOf string
}

// Failure says why a charge failed and whether the same request may be sent again.
type Failure struct {
	Code      string `json:"code"`
	Retryable bool   `json:"retryable"`
}

// Attempt is one processor attempt of a charge.
type Attempt struct {
	N                  int       `json:"n"`
	StartedAt          time.Time `json:"started_at"`
	DurationMS         int64     `json:"duration_ms"`
	TimeoutMS          int64     `json:"timeout_ms"`
	Class              string    `json:"class"`
	HTTPStatus         int       `json:"http_status"`
	ProcessorCode      string    `json:"processor_code"`
	RequestID          string    `json:"-"`
	RetryAfterMS       int64     `json:"retry_after_ms"`
	BackoffMS          int64     `json:"backoff_ms"`
	BudgetTokensBefore float64   `json:"budget_tokens_before"`
	BudgetTokensAfter  float64   `json:"budget_tokens_after"`
}

// NewID returns a new charge id: "ch_" and 26 lowercase base32 characters, the first 9 the
// time it was made (so that ids made one after another sort one after another, and the
// charges' primary key grows at its right edge), the rest random (85 bits).
func NewID() string { return randid.Ordered("ch_", time.Now()) }

// keyOpen reports whether the 24 h rule still allows a write under the charge's processor key
// at now: its first use is no earlier than the charge's creation.
func (c *Charge) keyOpen(now time.Time) bool { return processor.KeyOpen(c.CreatedAt, now) }

// ProcessorKey returns the processor idempotency key of the charge with id.
func ProcessorKey(id string) string { return "pg_" + id }
