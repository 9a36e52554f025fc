package store

import (
	"testing"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
)

// Only a plain approval takes finishFirstSQL, whose row holds constants for what an approval
// has nothing to say about; every other outcome takes the general statements.
func TestFirstOutcomeIsAPlainApproval(t *testing.T) {
	t.Parallel()
	approved := charge.CardOutcome{Outcome: decline.Approved}
	tests := []struct {
		name string
		edit func(p *charge.FinishParams)
		want bool
	}{
		{"plain approval", func(*charge.FinishParams) {}, true},
		{"not final", func(p *charge.FinishParams) { p.Charge.Status = charge.StatusPending }, false},
		{"key released", func(p *charge.FinishParams) { p.ReleaseKey = true }, false},
		{"moved", func(p *charge.FinishParams) { p.Moved = true }, false},
		{"failure", func(p *charge.FinishParams) { p.Charge.Failure = &charge.Failure{Code: "processor_unavailable"} }, false},
		{"decline", func(p *charge.FinishParams) { p.Charge.Decline = []byte(`{"code":"x"}`) }, false},
		{"next reattempt", func(p *charge.FinishParams) { p.Next = &charge.NextReattempt{ChargeID: "ch_2"} }, false},
		{"no card", func(p *charge.FinishParams) { p.Card = nil }, false},
		{"declined attempt", func(p *charge.FinishParams) { p.Card = &charge.CardOutcome{Outcome: decline.Declined} }, false},
		{"hold", func(p *charge.FinishParams) { p.Card = &charge.CardOutcome{Outcome: decline.Approved, Hold: "x"} }, false},
		{"cap reached", func(p *charge.FinishParams) {
			p.Card = &charge.CardOutcome{Outcome: decline.Approved, CapReached: true}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			card := approved
			p := charge.FinishParams{Charge: &charge.Charge{ID: "ch_1", Status: charge.StatusSucceeded}, Card: &card}
			tt.edit(&p)
			if got := firstOutcome(p); got != tt.want {
				t.Errorf("firstOutcome = %v, want %v", got, tt.want)
			}
		})
	}
}
