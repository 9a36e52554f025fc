package charge

import (
	"encoding/json"
	"time"

	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/processor"
)

// DeclineJSON is the decline block of a declined charge in the API.
type DeclineJSON struct {
	Code      string        `json:"code"`
	Network   string        `json:"network"`
	Category  int           `json:"category"`
	Class     decline.Class `json:"class"`
	Reattempt ReattemptJSON `json:"reattempt"`
	// Evidence holds every code the processor gave.
	Evidence *processor.Decline `json:"evidence,omitempty"`
}

// ReattemptJSON says whether and when the declined card may be charged again.
type ReattemptJSON struct {
	Allowed           bool       `json:"allowed"`
	NotBefore         *time.Time `json:"not_before"`
	Reason            string     `json:"reason,omitempty"`
	RemainingInWindow *int       `json:"remaining_in_window"`
}

// Classify returns the classification of the issuer's evidence.
func Classify(d *processor.Decline, network string) decline.Classification {
	if d == nil {
		d = &processor.Decline{}
	}
	return decline.Classify(decline.Evidence{
		DeclineCode:        d.DeclineCode,
		AdviceCode:         d.AdviceCode,
		NetworkDeclineCode: d.NetworkDeclineCode,
		NetworkAdviceCode:  d.NetworkAdviceCode,
		Network:            decline.ParseNetwork(network),
	})
}

// ScheduleBlock renders a decline block from the class schedule alone, at now: the first
// slot of the class's schedule (and never before a Mastercard advice delay). It knows
// nothing of the card's history at the processor account.
func ScheduleBlock(d *processor.Decline, network string, now time.Time) json.RawMessage {
	cl := Classify(d, network)
	blk := DeclineJSON{Code: cl.Code, Network: string(cl.Network), Category: int(cl.Category), Class: cl.Class, Evidence: d}
	switch {
	case cl.CapReached:
		blk.Reattempt.Reason = string(decline.ReasonNetworkCapReached)
	case cl.Class == decline.Never:
		blk.Reattempt.Reason = string(decline.ReasonNeverReattempt)
	case cl.Class == decline.FixData:
		blk.Reattempt.Reason = string(decline.ReasonFixDataFirst)
	default:
		notBefore := now
		if delay := cl.MACDelay(); delay > 0 {
			notBefore = now.Add(delay)
		}
		if slot, ok := decline.NextSlot(cl.Class, now, 0, notBefore); ok {
			slot = slot.UTC()
			blk.Reattempt.Allowed = true
			blk.Reattempt.NotBefore = &slot
		} else {
			blk.Reattempt.Reason = string(decline.ReasonScheduleExhausted)
		}
	}
	out, _ := json.Marshal(blk) // DeclineJSON holds only marshalable fields
	return out
}
