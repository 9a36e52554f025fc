package reconcile

import "time"

// ReplayReason says why a replay of a charge's key is allowed or forbidden.
type ReplayReason string

// The reasons of a replay verdict.
const (
	// ReplayInsideKeyWindow: allowed; the key is open and the processor may have seen it.
	ReplayInsideKeyWindow ReplayReason = "inside_key_window"
	// ReplayKeyClosed: the 24 h rule has closed the key; reads only.
	ReplayKeyClosed ReplayReason = "key_closed"
	// ReplayNeverWritten: no attempt's request was written, so the processor cannot have
	// seen the key: a replay would be a first charge now, long after the shopper left.
	ReplayNeverWritten ReplayReason = "never_written"
	// ReplayFirstSendUnknown: the key's first send time is unknown, so the 24 h rule cannot
	// be placed.
	ReplayFirstSendUnknown ReplayReason = "first_send_unknown"
	// ReplayOtherAccount: the charge was sent to another processor account.
	ReplayOtherAccount ReplayReason = "other_account"
	// ReplayManuallyResolved: an operator resolved the charge; nothing is written for it.
	ReplayManuallyResolved ReplayReason = "manually_resolved"
)

// ReplayVerdict says whether the charge's request may be sent again under its key now.
type ReplayVerdict struct {
	// Allowed reports that a replay is allowed now.
	Allowed bool `json:"allowed"`
	// Reason says why.
	Reason ReplayReason `json:"reason"`
	// Until is when the 24 h rule closes the key: no replay may be sent from then on,
	// whenever it was decided.
	Until time.Time `json:"until,omitzero"`
}

// CanReplay decides whether the request of charge c may be replayed under its key at now
// (database clock) against the processor account account. A replay is a write: only inside
// the 24 h rule, only for a key the processor may have seen (an attempt was written), only
// at the account the charge was sent to, and never for a charge an operator resolved. The
// replay itself sends the persisted parameters, byte for byte, under the same key, and must
// be sent before Until.
func CanReplay(c Charge, account string, now time.Time) ReplayVerdict {
	v := ReplayVerdict{Until: c.KeyClosesAt()}
	switch {
	case c.Account == "" || c.Account != account:
		v.Reason = ReplayOtherAccount
	case c.Manual != "":
		v.Reason = ReplayManuallyResolved
	case !c.Written:
		v.Reason = ReplayNeverWritten
	case c.FirstSentAt.IsZero():
		v.Reason = ReplayFirstSendUnknown
	case !now.Before(v.Until):
		v.Reason = ReplayKeyClosed
	default:
		v.Allowed, v.Reason = true, ReplayInsideKeyWindow
	}
	return v
}
