package reconcile

import (
	"testing"
	"time"

	"github.com/paygate/paygate/processor"
)

// TestKeyAnchoredOnEarliestSend checks that the 24 h rule and the list window count from the
// earliest possible send: a request sent at the creation whose process died before recording
// the attempt leaves first_sent_at to a run resumed hours later, yet the processor's key
// retention started at the first send.
func TestKeyAnchoredOnEarliestSend(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		created     time.Time
		firstSent   time.Time
		at          time.Time
		wantCloses  time.Time
		wantAllowed bool
		wantReason  ReplayReason
	}{
		{"unrecorded send, resumed 2 h later: closed 24 h 30 min after the creation",
			t0, t0.Add(2 * time.Hour), t0.Add(24*time.Hour + 30*time.Minute), t0.Add(processor.KeyWindow), false, ReplayKeyClosed},
		{"unrecorded send, resumed 2 h later: closed 23 h after the creation",
			t0, t0.Add(2 * time.Hour), t0.Add(processor.KeyWindow), t0.Add(processor.KeyWindow), false, ReplayKeyClosed},
		{"unrecorded send, resumed 2 h later: open a minute before",
			t0, t0.Add(2 * time.Hour), t0.Add(processor.KeyWindow - time.Minute), t0.Add(processor.KeyWindow), true, ReplayInsideKeyWindow},
		{"sent at the creation",
			t0, t0, t0.Add(processor.KeyWindow - time.Minute), t0.Add(processor.KeyWindow), true, ReplayInsideKeyWindow},
		{"first send recorded before the creation (clocks): the send anchors",
			t0, t0.Add(-time.Second), t0.Add(processor.KeyWindow - time.Second), t0.Add(processor.KeyWindow - time.Second), false, ReplayKeyClosed},
		{"no creation time: the first send anchors",
			time.Time{}, t0, t0.Add(processor.KeyWindow - time.Minute), t0.Add(processor.KeyWindow), true, ReplayInsideKeyWindow},
		{"first send unknown: the creation anchors, no replay",
			t0, time.Time{}, t0.Add(time.Hour), t0.Add(processor.KeyWindow), false, ReplayFirstSendUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := Charge{ID: "ch_1", Account: testAccount, CreatedAt: tc.created, FirstSentAt: tc.firstSent, Written: true}
			if got := c.KeyClosesAt(); !got.Equal(tc.wantCloses) {
				t.Errorf("key closes: got %v, want %v", got, tc.wantCloses)
			}
			v := CanReplay(c, testAccount, tc.at)
			if v.Allowed != tc.wantAllowed || v.Reason != tc.wantReason || !v.Until.Equal(tc.wantCloses) {
				t.Errorf("replay at %v: got %+v, want allowed=%v reason %s until %v", tc.at, v, tc.wantAllowed, tc.wantReason, tc.wantCloses)
			}
			// The list must find a PaymentIntent created by the earliest send.
			earliest := tc.wantCloses.Add(-processor.KeyWindow)
			if from, to := (Policy{}).ListWindow(c); from.After(earliest) || to.Before(earliest) {
				t.Errorf("list window: got [%v, %v], want it to cover %v", from, to, earliest)
			}
		})
	}
}

// TestKeyClosedCountedFromCreation checks that the decision itself sees the key closed 23 h
// after the creation when the recorded first send is later: with no evidence, the charge goes
// to review (reads only), and no replay is allowed.
func TestKeyClosedCountedFromCreation(t *testing.T) {
	t.Parallel()
	c := pendingCharge()
	c.CreatedAt, c.FirstSentAt, c.LastSentAt = t0, t0.Add(2*time.Hour), t0.Add(2*time.Hour)
	ev := Evidence{At: t0.Add(processor.KeyWindow + 30*time.Minute), Account: testAccount}
	ev.List = listed(c)
	ev.Search = &Search{Answered: true}
	d := Decide(c, ev, Policy{})
	if d.Kind != KindReview || d.Reason != ReasonKeyClosedNoEvidence || d.Replay.Allowed {
		t.Fatalf("got %+v, want review %s with no replay", d, ReasonKeyClosedNoEvidence)
	}
}
