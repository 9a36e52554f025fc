package decline

import (
	"testing"
	"time"
)

// An approval proves only the card data it was made with: it clears the fix-data
// declines whose expiry it may share, not those of an older expiry the cardholder
// has since replaced.
func TestCheckFixDataApprovalClearsOnlyItsData(t *testing.T) {
	t.Parallel()

	old, renewed := Expiry{Year: 2025, Month: 2}, Expiry{Year: 2028, Month: 2}
	expired := Attempt{At: t0, Outcome: Declined, Class: FixData, Network: Visa, Expiry: old}
	approvedNew := Attempt{At: t0.Add(time.Hour), Outcome: Approved, Network: Visa, Expiry: renewed}
	approvedOld := Attempt{At: t0.Add(time.Hour), Outcome: Approved, Network: Visa, Expiry: old}
	approvedUnknown := Attempt{At: t0.Add(time.Hour), Outcome: Approved, Network: Visa}
	at := t0.Add(day)

	tests := []struct {
		name    string
		h       History
		next    Next
		allowed bool
		reason  Reason
	}{
		{"old expiry after an approval with the new one", History{expired, approvedNew},
			Next{At: at, Network: Visa, Expiry: old}, false, ReasonFixDataFirst},
		{"unknown expiry after an approval with the new one", History{expired, approvedNew},
			Next{At: at, Network: Visa}, false, ReasonFixDataFirst},
		{"new expiry after an approval with the new one", History{expired, approvedNew},
			Next{At: at, Network: Visa, Expiry: renewed}, true, ""},
		{"same expiry after an approval with it", History{expired, approvedOld},
			Next{At: at, Network: Visa, Expiry: old}, true, ""},
		{"after an approval of unknown expiry", History{expired, approvedUnknown},
			Next{At: at, Network: Visa, Expiry: old}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assertVerdict(t, Check(tt.h, tt.next, Caps{}), tt.allowed, tt.reason, time.Time{})
		})
	}
}
