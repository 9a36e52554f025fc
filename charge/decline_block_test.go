package charge

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/processor"
)

// TestDeclineBlockFromEvidence: the decline block of a charge declined with the processor's
// evidence, as the API answers it. The evidence is a card error as Stripe sends it (Stripe,
// "Error codes" and "Decline codes"): its code is read when it has no decline_code, and the
// block's verdict is on reattempting the charge as it is (the same payment method, the
// same currency). An automatic chain schedules its next step from that verdict.
func TestDeclineBlockFromEvidence(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		d        processor.Decline
		outcome  decline.Outcome
		class    decline.Class
		hold     decline.Hold
		category int
		reason   decline.Reason
		after    time.Duration // not_before - now, when the refusal waits
		nextStep bool          // an automatic chain schedules a next step
	}{
		{name: "incorrect_cvc as the code alone", d: processor.Decline{Code: "incorrect_cvc"},
			outcome: decline.Declined, class: decline.FixData, hold: decline.HoldPaymentMethod, category: 3, reason: decline.ReasonFixDataFirst},
		{name: "expired_card as the code alone", d: processor.Decline{Code: "expired_card"},
			outcome: decline.Declined, class: decline.FixData, hold: decline.HoldExpiry, category: 3, reason: decline.ReasonFixDataFirst},
		{name: "incorrect_number as the code alone", d: processor.Decline{Code: "incorrect_number"},
			outcome: decline.Declined, class: decline.FixData, hold: decline.HoldPaymentMethod, category: 3, reason: decline.ReasonFixDataFirst},
		{name: "card_decline_rate_limit_exceeded", d: processor.Decline{Code: "card_decline_rate_limit_exceeded"},
			outcome: decline.Blocked, class: decline.Generic, hold: decline.HoldRateLimit, category: 4,
			reason: decline.ReasonNetworkCapReached, after: 24 * time.Hour},
		{name: "duplicate_transaction", d: processor.Decline{Code: "card_declined", DeclineCode: "duplicate_transaction"},
			outcome: decline.Declined, class: decline.Generic, hold: decline.HoldNoReattempt, category: 4, reason: decline.ReasonPossibleDuplicate},
		{name: "currency_not_supported", d: processor.Decline{Code: "card_declined", DeclineCode: "currency_not_supported"},
			outcome: decline.Declined, class: decline.Never, hold: decline.HoldCurrency, category: 1, reason: decline.ReasonNeverReattempt},
		{name: "pin_try_exceeded", d: processor.Decline{Code: "card_declined", DeclineCode: "pin_try_exceeded"},
			outcome: decline.Declined, class: decline.FixData, hold: decline.HoldCard, category: 2, reason: decline.ReasonFixDataFirst},
		{name: "mobile_device_authentication_required", d: processor.Decline{Code: "card_declined", DeclineCode: "mobile_device_authentication_required"},
			outcome: decline.Declined, class: decline.Authenticate, category: 3, reason: decline.ReasonScheduleExhausted},
		{name: "Visa 62 with restricted_card", d: processor.Decline{Code: "card_declined", DeclineCode: "restricted_card", NetworkDeclineCode: "62"},
			outcome: decline.Declined, class: decline.Never, category: 2, reason: decline.ReasonNeverReattempt},
		{name: "insufficient_funds", d: processor.Decline{Code: "card_declined", DeclineCode: "insufficient_funds"},
			outcome: decline.Declined, class: decline.Funds, category: 2, reason: decline.ReasonTooEarly, after: 24 * time.Hour, nextStep: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &Charge{ID: "ch_1", Chain: "ch_1", Currency: "usd", PaymentMethod: "pm_1", ReattemptMode: ReattemptAuto,
				Card: &Card{Fingerprint: "fp_1", Network: "visa", ExpMonth: 3, ExpYear: 2030}}
			cl := Classify(&tt.d, c.Card.Network)
			co := cardOutcome(StatusDeclined, cl, "requires_payment_method")
			if co.Outcome != tt.outcome || co.Class != tt.class || co.Hold != tt.hold {
				t.Fatalf("card outcome: got %s %s %q, want %s %s %q", co.Outcome, co.Class, co.Hold, tt.outcome, tt.class, tt.hold)
			}
			raw, v := declineBlock(c, &tt.d, cl, co, nil, now, now, decline.DefaultCaps())
			var blk DeclineJSON
			if err := json.Unmarshal(raw, &blk); err != nil {
				t.Fatal(err)
			}
			if blk.Class != tt.class || blk.Hold != tt.hold || blk.Category != tt.category {
				t.Errorf("block: got %s %q category %d, want %s %q category %d", blk.Class, blk.Hold, blk.Category, tt.class, tt.hold, tt.category)
			}
			if blk.Reattempt.Allowed || decline.Reason(blk.Reattempt.Reason) != tt.reason {
				t.Errorf("reattempt: got %+v, want refused %s", blk.Reattempt, tt.reason)
			}
			switch {
			case tt.after == 0 && blk.Reattempt.NotBefore != nil:
				t.Errorf("not_before: got %v, want none", blk.Reattempt.NotBefore)
			case tt.after != 0 && (blk.Reattempt.NotBefore == nil || !blk.Reattempt.NotBefore.Equal(now.Add(tt.after))):
				t.Errorf("not_before: got %v, want %v", blk.Reattempt.NotBefore, now.Add(tt.after))
			}
			if got := nextReattempt(c, v, now) != nil; got != tt.nextStep {
				t.Errorf("next automatic step: got %v, want %v", got, tt.nextStep)
			}
		})
	}
}
