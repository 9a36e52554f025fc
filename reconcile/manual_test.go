package reconcile

import (
	"testing"
	"time"
)

// TestAgainstManual checks the decision a check makes for a charge an operator resolved,
// including a decision already made against another resolution (an operator resolved the
// charge again while the check ran): the processor's outcome decides, not the earlier
// resolution.
func TestAgainstManual(t *testing.T) {
	t.Parallel()
	next := t0.Add(time.Hour)
	succeeded := Decision{Kind: KindResolve, Outcome: OutcomeSucceeded, Path: PathList, PaymentIntent: "pi_1"}
	for _, tc := range []struct {
		name   string
		manual Outcome
		d      Decision
		want   Decision
	}{
		{"evidence contradicts the operator", OutcomeFailed, succeeded,
			Decision{Kind: KindReview, Reason: ReasonContradictsManual, Outcome: OutcomeSucceeded, Path: PathList, PaymentIntent: "pi_1"}},
		{"evidence confirms the operator", OutcomeSucceeded, succeeded,
			Decision{Kind: KindPending, Outcome: OutcomeSucceeded, Path: PathList, PaymentIntent: "pi_1"}},
		{"a contradiction of failed confirms a later succeeded", OutcomeSucceeded, AgainstManual(OutcomeFailed, succeeded),
			Decision{Kind: KindPending, Outcome: OutcomeSucceeded, Path: PathList, PaymentIntent: "pi_1"}},
		{"a confirmation of succeeded contradicts a later declined", OutcomeDeclined, AgainstManual(OutcomeSucceeded, succeeded),
			Decision{Kind: KindReview, Reason: ReasonContradictsManual, Outcome: OutcomeSucceeded, Path: PathList, PaymentIntent: "pi_1"}},
		{"no evidence after the key closed needs no review", OutcomeFailed,
			Decision{Kind: KindReview, Reason: ReasonKeyClosedNoEvidence, NextCheckAt: next},
			Decision{Kind: KindPending, NextCheckAt: next}},
		{"conflicting evidence still needs a person", OutcomeFailed,
			Decision{Kind: KindReview, Reason: ReasonMismatch, Mismatch: []string{"amount"}},
			Decision{Kind: KindReview, Reason: ReasonMismatch, Mismatch: []string{"amount"}}},
		{"a mismatching success contradicts a manual failed", OutcomeFailed,
			Decision{Kind: KindReview, Reason: ReasonMismatch, Mismatch: []string{"amount"}, PaymentIntent: "pi_1", Status: "succeeded"},
			Decision{Kind: KindReview, Reason: ReasonContradictsManual, Mismatch: []string{"amount"}, PaymentIntent: "pi_1", Status: "succeeded"}},
		{"a mismatching success contradicts a manual declined", OutcomeDeclined,
			Decision{Kind: KindReview, Reason: ReasonMismatch, Mismatch: []string{"amount"}, PaymentIntent: "pi_1", Status: "succeeded"},
			Decision{Kind: KindReview, Reason: ReasonContradictsManual, Mismatch: []string{"amount"}, PaymentIntent: "pi_1", Status: "succeeded"}},
		{"a mismatching success confirms a manual succeeded, and still needs a person", OutcomeSucceeded,
			Decision{Kind: KindReview, Reason: ReasonMismatch, Mismatch: []string{"amount"}, PaymentIntent: "pi_1", Status: "succeeded"},
			Decision{Kind: KindReview, Reason: ReasonMismatch, Mismatch: []string{"amount"}, PaymentIntent: "pi_1", Status: "succeeded"}},
		{"nothing found keeps the schedule", OutcomeFailed, Decision{Kind: KindPending, NextCheckAt: next},
			Decision{Kind: KindPending, NextCheckAt: next}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := AgainstManual(tc.manual, tc.d); jsonOf(t, got) != jsonOf(t, tc.want) {
				t.Errorf("got  %s\nwant %s", jsonOf(t, got), jsonOf(t, tc.want))
			}
		})
	}
}
