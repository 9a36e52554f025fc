package reconcile

import (
	"testing"
	"time"

	"github.com/paygate/paygate/processor"
)

func TestCanReplay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		charge  func(*Charge)
		account string
		at      time.Duration
		want    ReplayReason
	}{
		{"inside the key window", nil, testAccount, 30 * time.Second, ReplayInsideKeyWindow},
		// pendingCharge was created a second before its first send: the creation anchors the key.
		{"a second before the key closes", nil, testAccount, processor.KeyWindow - 2*time.Second, ReplayInsideKeyWindow},
		{"when the key closes, counted from the creation", nil, testAccount, processor.KeyWindow - time.Second, ReplayKeyClosed},
		{"when the key closes", nil, testAccount, processor.KeyWindow, ReplayKeyClosed},
		{"after the key closed", nil, testAccount, 30 * time.Hour, ReplayKeyClosed},
		{"never written", func(c *Charge) { c.Written = false }, testAccount, time.Minute, ReplayNeverWritten},
		{"first send unknown", func(c *Charge) { c.FirstSentAt = time.Time{} }, testAccount, time.Minute, ReplayFirstSendUnknown},
		{"other account", nil, "acct_other", time.Minute, ReplayOtherAccount},
		{"no account recorded", func(c *Charge) { c.Account = "" }, "", time.Minute, ReplayOtherAccount},
		{"resolved by an operator", func(c *Charge) { c.Manual = OutcomeFailed }, testAccount, time.Minute, ReplayManuallyResolved},
		{"the window runs from the first send, not the last", func(c *Charge) { c.LastSentAt = t0.Add(2 * time.Hour) },
			testAccount, processor.KeyWindow + time.Minute, ReplayKeyClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := pendingCharge()
			if tc.charge != nil {
				tc.charge(&c)
			}
			got := CanReplay(c, tc.account, t0.Add(tc.at))
			if got.Reason != tc.want || got.Allowed != (tc.want == ReplayInsideKeyWindow) {
				t.Fatalf("got %+v, want reason %s", got, tc.want)
			}
			if !got.Until.Equal(c.KeyClosesAt()) {
				t.Fatalf("until: got %v, want %v", got.Until, c.KeyClosesAt())
			}
		})
	}
}
