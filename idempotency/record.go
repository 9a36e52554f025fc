package idempotency

import "time"

// Record is what is stored under one inbound key of one merchant.
type Record struct {
	MerchantID     string
	Key            string
	Fingerprint    Fingerprint
	ChargeID       string     // empty until the operation is created
	LockedUntil    *time.Time // while set and in the future, a request holds the key
	ResponseStatus int        // 0 when no response is stored (the operation's)
	ResponseBody   []byte     // nil for a status whose answer is rendered from current state
}

// Verdict is what a request gets for a key that already has a record.
type Verdict int

// The verdicts of Decide.
const (
	// Proceed: the request takes the key's lock and runs (or resumes) the operation.
	Proceed Verdict = iota
	// Replay: the stored response answers the request.
	Replay
	// InUse: another request holds the key now (409 idempotency_key_in_use).
	InUse
	// Mismatch: the key was first used with another request (422 idempotency_key_reused).
	Mismatch
)

// Decide returns the verdict for a request with fingerprint fp on a key whose record is
// rec, at time now (the database clock).
func Decide(rec Record, fp Fingerprint, now time.Time) Verdict {
	switch {
	case !fp.Matches(rec.Fingerprint):
		return Mismatch
	case rec.ResponseStatus != 0:
		return Replay
	case rec.LockedUntil != nil && rec.LockedUntil.After(now):
		return InUse
	default:
		return Proceed
	}
}
