package reconcile

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/processor"
)

// possibleDuplicateCharge returns a pending charge on a Visa card, created at at.
func possibleDuplicateCharge(at time.Time) *charge.Charge {
	return &charge.Charge{ID: "ch_2", MerchantID: "m_1", Amount: 1200, Currency: "usd", Status: charge.StatusPending,
		ProcessorAccount: "acct_1", CreatedAt: at, Card: &charge.Card{Fingerprint: "fp_1", Network: "visa"}}
}

// TestPlanCheckPossibleDuplicate checks that a check which finds a pending charge declined
// as a duplicate transaction resolves it declined and puts it in review as a possible
// duplicate payment, naming the earlier payments that may be its order's first; any other
// decline settles the charge without review.
func TestPlanCheckPossibleDuplicate(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	first := charge.Payment{ChargeID: "ch_1", MerchantID: "m_1", Amount: 1200, Currency: "usd",
		Status: charge.StatusSucceeded, CreatedAt: at.Add(-time.Minute)}
	other := charge.Payment{ChargeID: "ch_0", MerchantID: "m_1", Amount: 500, Currency: "usd",
		Status: charge.StatusSucceeded, CreatedAt: at.Add(-2 * time.Minute)}
	for _, tc := range []struct {
		name       string
		decline    processor.Decline
		wantReview bool
		wantFirst  []string
	}{
		{"a duplicate transaction goes to review with its first payment",
			processor.Decline{Code: "card_declined", DeclineCode: "duplicate_transaction"}, true, []string{"ch_1"}},
		{"insufficient funds settles without review",
			processor.Decline{Code: "card_declined", DeclineCode: "insufficient_funds"}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := tc.decline
			chk := Check{N: 1, At: at, Decision: Decision{Kind: KindResolve, Outcome: OutcomeDeclined,
				Path: PathRetrieve, PaymentIntent: "pi_2", Decline: &d}}
			s := Standing{Charge: possibleDuplicateCharge(at.Add(-30 * time.Second)), HistoryAt: at,
				Earlier: []charge.Payment{other, first}}
			p, err := PlanCheck(chk, s, decline.Caps{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Resolve == nil || p.Resolve.Status != charge.StatusDeclined {
				t.Fatalf("resolution %+v, want declined", p.Resolve)
			}
			if p.Review != tc.wantReview {
				t.Fatalf("review %v, want %v", p.Review, tc.wantReview)
			}
			var review *charge.Event
			for i := range p.Events {
				if p.Events[i].Action == "review" {
					review = &p.Events[i]
				}
			}
			if !tc.wantReview {
				if review != nil || p.ReviewReason != "" {
					t.Fatalf("review event %+v, reason %q: want none", review, p.ReviewReason)
				}
				return
			}
			if p.ReviewReason != charge.ReasonPossibleDuplicate || p.ReviewSince == nil || !p.ReviewSince.Equal(at) {
				t.Fatalf("reason %q since %v, want %q since %v", p.ReviewReason, p.ReviewSince, charge.ReasonPossibleDuplicate, at)
			}
			if review == nil || review.Reason != charge.ReasonPossibleDuplicate || review.StatusAfter != string(charge.StatusDeclined) {
				t.Fatalf("review event %+v", review)
			}
			var ev struct {
				First []struct {
					Charge string `json:"charge"`
				} `json:"likely_first_payments"`
			}
			if err := json.Unmarshal(review.Evidence, &ev); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range ev.First {
				got = append(got, f.Charge)
			}
			if len(got) != len(tc.wantFirst) || got[0] != tc.wantFirst[0] {
				t.Fatalf("first payments %v, want %v", got, tc.wantFirst)
			}
		})
	}
}

// TestPlanAcknowledgePossibleDuplicate checks the manual resolution of a declined charge in
// review as a possible duplicate: only declined acknowledges it, with no reconciliation
// first, keeping the processor's decline block and saying so in the trail.
func TestPlanAcknowledgePossibleDuplicate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	block := json.RawMessage(`{"code":"card_declined","decline_code":"duplicate_transaction"}`)
	standing := func(reason string) ManualStanding {
		c := possibleDuplicateCharge(now.Add(-time.Hour))
		c.Status, c.Decline = charge.StatusDeclined, block
		return ManualStanding{Now: now, Charge: c, InReview: true, ReviewReason: reason,
			Evidence: json.RawMessage(`{"likely_first_payments":[]}`)}
	}
	for _, tc := range []struct {
		name    string
		reason  string
		outcome charge.Status
		wantErr error
	}{
		{"declined acknowledges it", charge.ReasonPossibleDuplicate, charge.StatusDeclined, nil},
		{"succeeded is refused: the decline stands", charge.ReasonPossibleDuplicate, charge.StatusSucceeded, ErrDeclineStands},
		{"failed is refused: the decline stands", charge.ReasonPossibleDuplicate, charge.StatusFailed, ErrDeclineStands},
		{"a declined charge in review for another reason is not acknowledged so", ReasonDuplicatePayment, charge.StatusDeclined, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := ManualResolution{MerchantID: "m_1", ChargeID: "ch_2", Outcome: tc.outcome, Note: "order paid by ch_1",
				Actor: "operator:key_1", Within: time.Hour}
			p, err := m.Plan(standing(tc.reason))
			if tc.reason != charge.ReasonPossibleDuplicate {
				// Any other review takes the ordinary path, which asks for a recent
				// inconclusive reconciliation first.
				if !errors.Is(err, ErrReconcileFirst) {
					t.Fatalf("plan %+v, err %v: want %v", p, err, ErrReconcileFirst)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				return
			}
			if p.Resolution.Status != charge.StatusDeclined || string(p.Resolution.Decline) != string(block) {
				t.Fatalf("resolution %+v, want declined with the processor's block", p.Resolution)
			}
			if len(p.Events) != 1 || p.Events[0].Action != "manual_resolution" ||
				p.Events[0].Reason != charge.ReasonPossibleDuplicate || p.Events[0].Note != m.Note || p.Events[0].Actor != m.Actor {
				t.Fatalf("events %+v", p.Events)
			}
		})
	}
}
