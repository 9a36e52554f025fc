package reconcile

import (
	"fmt"
	"time"
)

// AbsenceGap is the least time between the two empty lists of an authoritative absence.
const AbsenceGap = time.Hour

// Defaults of a Policy's zero fields.
const (
	// DefaultListBefore opens the list window before the first send: the processor's clock
	// may run behind the database's.
	DefaultListBefore = 5 * time.Minute
	// DefaultListAfter closes the list window after the last send: a request may execute
	// well after it was sent (a timeout after send), and the processor's clock may run ahead.
	DefaultListAfter = 10 * time.Minute
	// DefaultSearchLag is how long after the last send an empty search proves nothing even
	// by its own standard: search lags by minutes, up to an hour in incidents.
	DefaultSearchLag = time.Hour
)

// Policy holds the tunable numbers of the decision. The zero Policy is the default one.
// The 24 h rule (processor.KeyWindow) and the absence gap (AbsenceGap) are not tunable.
type Policy struct {
	// Schedule is when a pending charge is checked (DefaultSchedule when nil).
	Schedule Schedule
	// ListBefore and ListAfter widen the send window for the list (DefaultListBefore,
	// DefaultListAfter when zero).
	ListBefore time.Duration
	ListAfter  time.Duration
	// SearchLag is how long an empty search may still be lag (DefaultSearchLag when zero).
	SearchLag time.Duration
}

// withDefaults fills the zero fields.
func (p Policy) withDefaults() Policy {
	if p.Schedule == nil {
		p.Schedule = DefaultSchedule
	}
	if p.ListBefore <= 0 {
		p.ListBefore = DefaultListBefore
	}
	if p.ListAfter <= 0 {
		p.ListAfter = DefaultListAfter
	}
	if p.SearchLag <= 0 {
		p.SearchLag = DefaultSearchLag
	}
	return p
}

// Validate reports a schedule that is set and invalid.
func (p Policy) Validate() error {
	if p.Schedule != nil {
		if err := p.Schedule.Validate(); err != nil {
			return fmt.Errorf("reconcile: policy: %w", err)
		}
	}
	return nil
}

// ListWindow is the created-time window the list scans for a charge, the send window: from
// its earliest possible send (the earlier of its creation and its recorded first send) less
// ListBefore to its last send plus ListAfter. A PaymentIntent under the charge's key cannot have been created outside it
// unless the clocks disagree by more than the margins; search covers that case.
func (p Policy) ListWindow(c Charge) (from, to time.Time) {
	p = p.withDefaults()
	return c.earliestSend().Add(-p.ListBefore), c.lastSent().Add(p.ListAfter)
}
