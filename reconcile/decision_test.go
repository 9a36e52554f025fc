package reconcile

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/retry"
)

var t0 = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

const testAccount = "acct_test"

// pendingCharge is a charge sent once at t0 whose outcome is unknown.
func pendingCharge() Charge {
	return Charge{ID: "ch_1", Amount: 1999, Currency: "usd", Customer: "cus_1", PaymentMethod: "pm_card_visa",
		Account: testAccount, CreatedAt: t0.Add(-time.Second), FirstSentAt: t0, LastSentAt: t0.Add(3 * time.Second), Written: true}
}

// intentFor is the PaymentIntent that matches pendingCharge, in the given status.
func intentFor(id, status string) processor.Intent {
	return processor.Intent{ID: id, Status: status, Amount: 1999, Currency: "usd", Customer: "cus_1",
		PaymentMethod: "pm_card_visa", ChargeID: "ch_1", Created: t0.Add(time.Second)}
}

func evidenceAt(d time.Duration) Evidence {
	return Evidence{At: t0.Add(d), Account: testAccount}
}

// listed is a complete list of the charge's send window holding intents.
func listed(c Charge, intents ...processor.Intent) *Listing {
	from, to := Policy{}.ListWindow(c)
	return &Listing{From: from, To: to, Pages: 1, Scanned: len(intents) + 3, Complete: true, Intents: intents}
}

// emptyCheck is an earlier check at d whose complete list found nothing.
func emptyCheck(c Charge, n int, d time.Duration) Check {
	ev := evidenceAt(d)
	ev.List = listed(c)
	ev.Search = &Search{Answered: true}
	return Check{N: n, At: ev.At, Evidence: ev, Decision: Decision{Kind: KindPending}}
}

var declineEvidence = &processor.Decline{Code: "card_declined", DeclineCode: "insufficient_funds",
	NetworkDeclineCode: "51", AdviceCode: "try_again_later"}

func TestDecide(t *testing.T) {
	t.Parallel()
	closed := processor.KeyWindow + time.Hour // the first daily check, an hour after the key closed
	withRef := func(c *Charge) { c.ProcessorRef = "pi_1" }
	declined := intentFor("pi_1", "requires_payment_method")
	declined.Decline = declineEvidence

	for _, tc := range []struct {
		name   string
		charge func(*Charge)
		ev     func(c Charge) Evidence
		want   Decision
	}{
		// Retrieve.
		{"retrieve hit succeeded", withRef, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			in := intentFor("pi_1", "succeeded")
			ev.Retrieve = &Retrieval{ID: "pi_1", Intent: &in}
			return ev
		}, Decision{Kind: KindResolve, Outcome: OutcomeSucceeded, Path: PathRetrieve, PaymentIntent: "pi_1", Status: "succeeded"}},
		{"retrieve hit declined", withRef, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			ev.Retrieve = &Retrieval{ID: "pi_1", Intent: &declined}
			return ev
		}, Decision{Kind: KindResolve, Outcome: OutcomeDeclined, Path: PathRetrieve, PaymentIntent: "pi_1",
			Status: "requires_payment_method", Decline: declineEvidence}},
		{"retrieve hit processing", withRef, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			in := intentFor("pi_1", "processing")
			ev.Retrieve = &Retrieval{ID: "pi_1", Intent: &in}
			return ev
		}, Decision{Kind: KindPending, Path: PathRetrieve, PaymentIntent: "pi_1", Status: "processing", NextCheckAt: t0.Add(5 * time.Minute)}},
		{"retrieve hit requires_action", withRef, func(c Charge) Evidence {
			ev := evidenceAt(2 * time.Hour)
			in := intentFor("pi_1", "requires_action")
			ev.Retrieve = &Retrieval{ID: "pi_1", Intent: &in}
			return ev
		}, Decision{Kind: KindPending, Path: PathRetrieve, PaymentIntent: "pi_1", Status: "requires_action", NextCheckAt: t0.Add(24 * time.Hour)}},
		{"retrieve not found", withRef, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			ev.Retrieve = &Retrieval{ID: "pi_1", NotFound: true}
			ev.List = listed(c)
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonRefNotFound, Path: PathRetrieve, PaymentIntent: "pi_1"}},
		{"retrieve failed, list finds it", withRef, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			ev.Retrieve = &Retrieval{ID: "pi_1", Failure: &ReadFailure{Class: retry.ClassRetry, HTTPStatus: 503}}
			ev.List = listed(c, intentFor("pi_1", "succeeded"))
			return ev
		}, Decision{Kind: KindResolve, Outcome: OutcomeSucceeded, Path: PathList, PaymentIntent: "pi_1", Status: "succeeded"}},

		// List and search.
		{"list hit succeeded", nil, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			ev.List = listed(c, intentFor("pi_9", "succeeded"))
			return ev
		}, Decision{Kind: KindResolve, Outcome: OutcomeSucceeded, Path: PathList, PaymentIntent: "pi_9", Status: "succeeded"}},
		{"list hit declined", nil, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			ev.List = listed(c, declined)
			return ev
		}, Decision{Kind: KindResolve, Outcome: OutcomeDeclined, Path: PathList, PaymentIntent: "pi_1",
			Status: "requires_payment_method", Decline: declineEvidence}},
		{"list ignores other charges", nil, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			other := intentFor("pi_other", "succeeded")
			other.ChargeID = "ch_other"
			ev.List = listed(c, other)
			ev.Search = &Search{Answered: true, MayLag: true}
			return ev
		}, Decision{Kind: KindPending, NextCheckAt: t0.Add(5 * time.Minute)}},
		{"search hit after lag", nil, func(c Charge) Evidence {
			ev := evidenceAt(6 * time.Minute)
			ev.List = listed(c)
			ev.Search = &Search{Answered: true, Intents: []processor.Intent{intentFor("pi_late", "succeeded")}}
			return ev
		}, Decision{Kind: KindResolve, Outcome: OutcomeSucceeded, Path: PathSearch, PaymentIntent: "pi_late", Status: "succeeded"}},
		{"search still lagging", nil, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			ev.List = listed(c)
			ev.Search = &Search{Answered: true, MayLag: true}
			return ev
		}, Decision{Kind: KindPending, NextCheckAt: t0.Add(5 * time.Minute)}},
		{"every read failed", nil, func(c Charge) Evidence {
			ev := evidenceAt(5 * time.Minute)
			ev.List = &Listing{Failure: &ReadFailure{Class: retry.ClassRetry, HTTPStatus: 500}}
			ev.Search = &Search{Failure: &ReadFailure{Class: retry.ClassRetryAfter, HTTPStatus: 429}}
			return ev
		}, Decision{Kind: KindPending, NextCheckAt: t0.Add(time.Hour)}},

		// Conflicting evidence.
		{"mismatch amount and customer", nil, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			in := intentFor("pi_1", "succeeded")
			in.Amount, in.Customer = 2000, "cus_2"
			ev.List = listed(c, in)
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonMismatch, Path: PathList, PaymentIntent: "pi_1", Status: "succeeded",
			Mismatch: []string{fieldAmount, fieldCustomer}}},
		{"mismatch currency and payment method", nil, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			in := intentFor("pi_1", "succeeded")
			in.Currency, in.PaymentMethod = "eur", "pm_card_mastercard"
			ev.List = listed(c, in)
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonMismatch, Path: PathList, PaymentIntent: "pi_1", Status: "succeeded",
			Mismatch: []string{fieldCurrency, fieldPaymentMethod}}},
		{"currency compared without case", nil, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			in := intentFor("pi_1", "succeeded")
			in.Currency = "USD"
			ev.List = listed(c, in)
			return ev
		}, Decision{Kind: KindResolve, Outcome: OutcomeSucceeded, Path: PathList, PaymentIntent: "pi_1", Status: "succeeded"}},
		{"retrieved PaymentIntent of another charge", withRef, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			in := intentFor("pi_1", "succeeded")
			in.ChargeID = "ch_other"
			ev.Retrieve = &Retrieval{ID: "pi_1", Intent: &in}
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonMismatch, Path: PathRetrieve, PaymentIntent: "pi_1", Status: "succeeded",
			Mismatch: []string{fieldChargeID}}},
		{"root charge id differs", func(c *Charge) { c.RootChargeID = "ch_root" }, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			ev.List = listed(c, intentFor("pi_1", "succeeded"))
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonMismatch, Path: PathList, PaymentIntent: "pi_1", Status: "succeeded",
			Mismatch: []string{fieldRootChargeID}}},
		{"two PaymentIntents carry the charge id", nil, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			ev.List = listed(c, intentFor("pi_2", "succeeded"), intentFor("pi_1", "succeeded"))
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonDuplicate, Path: PathList, PaymentIntents: []string{"pi_2", "pi_1"}}},
		{"list and search find different ones", nil, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			ev.List = listed(c, intentFor("pi_1", "succeeded"))
			ev.Search = &Search{Answered: true, Intents: []processor.Intent{intentFor("pi_1", "succeeded"), intentFor("pi_3", "processing")}}
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonDuplicate, Path: PathList, PaymentIntents: []string{"pi_1", "pi_3"}}},
		{"one other than processor_ref", withRef, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			ev.Retrieve = &Retrieval{ID: "pi_1", Failure: &ReadFailure{Class: retry.ClassRetry}}
			ev.List = listed(c, intentFor("pi_7", "succeeded"))
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonDuplicate, Path: PathRetrieve, PaymentIntents: []string{"pi_1", "pi_7"}}},
		{"canceled", nil, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			ev.List = listed(c, intentFor("pi_1", "canceled"))
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonUnexpectedStatus, Path: PathList, PaymentIntent: "pi_1", Status: "canceled"}},
		{"requires_payment_method without an error", nil, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			ev.List = listed(c, intentFor("pi_1", "requires_payment_method"))
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonUnexpectedStatus, Path: PathList, PaymentIntent: "pi_1", Status: "requires_payment_method"}},
		{"other account", func(c *Charge) { c.Account = "acct_other" }, func(c Charge) Evidence {
			return evidenceAt(30 * time.Second)
		}, Decision{Kind: KindReview, Reason: ReasonOtherAccount}},
		{"no account recorded", func(c *Charge) { c.Account = "" }, func(c Charge) Evidence {
			return evidenceAt(30 * time.Second)
		}, Decision{Kind: KindReview, Reason: ReasonOtherAccount}},

		// Replay answers.
		{"replay succeeded", nil, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			ev.List = listed(c)
			ev.Search = &Search{Answered: true, MayLag: true}
			ev.Replay = &ReplayAnswer{Class: retry.ClassSuccess, HTTPStatus: 200, PaymentIntent: "pi_r", Status: "succeeded", Replayed: true}
			return ev
		}, Decision{Kind: KindResolve, Outcome: OutcomeSucceeded, Path: PathReplay, PaymentIntent: "pi_r", Status: "succeeded"}},
		{"replay declined", nil, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			ev.Replay = &ReplayAnswer{Class: retry.ClassDecline, HTTPStatus: 402, Code: "insufficient_funds", PaymentIntent: "pi_r",
				Status: "requires_payment_method", Decline: declineEvidence}
			return ev
		}, Decision{Kind: KindResolve, Outcome: OutcomeDeclined, Path: PathReplay, PaymentIntent: "pi_r",
			Status: "requires_payment_method", Decline: declineEvidence}},
		{"replay refused: key used with other parameters", nil, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			ev.Replay = &ReplayAnswer{Class: retry.ClassTerminal, HTTPStatus: 400, Code: "idempotency_error"}
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonReplayRefused, Path: PathReplay}},
		{"replay answered processing", nil, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			ev.Replay = &ReplayAnswer{Class: retry.ClassUnknownFinal, HTTPStatus: 200, PaymentIntent: "pi_r", Status: "processing"}
			return ev
		}, Decision{Kind: KindPending, Path: PathReplay, PaymentIntent: "pi_r", Status: "processing", NextCheckAt: t0.Add(5 * time.Minute)}},
		{"replay got a stored 500", nil, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			ev.Replay = &ReplayAnswer{Class: retry.ClassStoredResult, HTTPStatus: 500, Replayed: true}
			return ev
		}, Decision{Kind: KindPending, NextCheckAt: t0.Add(5 * time.Minute)}},
		{"replay timed out", nil, func(c Charge) Evidence {
			ev := evidenceAt(30 * time.Second)
			ev.Replay = &ReplayAnswer{Class: retry.ClassOutcomeUnknown, Code: "timeout"}
			return ev
		}, Decision{Kind: KindPending, NextCheckAt: t0.Add(5 * time.Minute)}},

		// The schedule, the 24 h rule and the absence.
		{"no evidence, inside the key window", nil, func(c Charge) Evidence {
			ev := evidenceAt(time.Hour)
			ev.List = listed(c)
			ev.Search = &Search{Answered: true}
			return ev
		}, Decision{Kind: KindPending, NextCheckAt: t0.Add(24 * time.Hour)}},
		{"key closed, first empty list", nil, func(c Charge) Evidence {
			ev := evidenceAt(closed)
			ev.List = listed(c)
			ev.Search = &Search{Answered: true}
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonKeyClosedNoEvidence, NextCheckAt: t0.Add(48 * time.Hour)}},
		{"authoritative absence", func(c *Charge) {
			c.Checks = []Check{emptyCheck(*c, 1, time.Hour), emptyCheck(*c, 2, closed)}
		}, func(c Charge) Evidence {
			ev := evidenceAt(48 * time.Hour)
			ev.List = listed(c)
			ev.Search = &Search{Answered: true}
			return ev
		}, Decision{Kind: KindResolve, Outcome: OutcomeFailed, Path: PathAbsence, AbsentSince: t0.Add(closed)}},
		{"absence exactly an hour apart", func(c *Charge) {
			c.Checks = []Check{emptyCheck(*c, 1, processor.KeyWindow)}
		}, func(c Charge) Evidence {
			ev := evidenceAt(processor.KeyWindow + AbsenceGap)
			ev.List = listed(c)
			return ev
		}, Decision{Kind: KindResolve, Outcome: OutcomeFailed, Path: PathAbsence, AbsentSince: t0.Add(processor.KeyWindow)}},
		{"second empty list too soon", func(c *Charge) {
			c.Checks = []Check{emptyCheck(*c, 1, closed)}
		}, func(c Charge) Evidence {
			ev := evidenceAt(closed + AbsenceGap - time.Second)
			ev.List = listed(c)
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonKeyClosedNoEvidence, NextCheckAt: t0.Add(48 * time.Hour)}},
		{"earlier empty list before the key closed", func(c *Charge) {
			c.Checks = []Check{emptyCheck(*c, 1, processor.KeyWindow-time.Minute)}
		}, func(c Charge) Evidence {
			ev := evidenceAt(closed)
			ev.List = listed(c)
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonKeyClosedNoEvidence, NextCheckAt: t0.Add(48 * time.Hour)}},
		{"current list incomplete", func(c *Charge) {
			c.Checks = []Check{emptyCheck(*c, 1, closed)}
		}, func(c Charge) Evidence {
			ev := evidenceAt(48 * time.Hour)
			ev.List = listed(c)
			ev.List.Complete = false
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonKeyClosedNoEvidence, NextCheckAt: t0.Add(72 * time.Hour)}},
		{"current list failed", func(c *Charge) {
			c.Checks = []Check{emptyCheck(*c, 1, closed)}
		}, func(c Charge) Evidence {
			ev := evidenceAt(48 * time.Hour)
			ev.List = &Listing{Failure: &ReadFailure{Class: retry.ClassRetry, HTTPStatus: 503}}
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonKeyClosedNoEvidence, NextCheckAt: t0.Add(72 * time.Hour)}},
		{"earlier list over a narrower window", func(c *Charge) {
			chk := emptyCheck(*c, 1, closed)
			chk.Evidence.List.To = c.LastSentAt
			c.Checks = []Check{chk}
		}, func(c Charge) Evidence {
			ev := evidenceAt(48 * time.Hour)
			ev.List = listed(c)
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonKeyClosedNoEvidence, NextCheckAt: t0.Add(72 * time.Hour)}},
		{"no absence once a PaymentIntent was seen", func(c *Charge) {
			seen := emptyCheck(*c, 1, 30*time.Second)
			seen.Evidence.Search.Intents = []processor.Intent{intentFor("pi_1", "processing")}
			c.Checks = []Check{seen, emptyCheck(*c, 2, closed)}
		}, func(c Charge) Evidence {
			ev := evidenceAt(48 * time.Hour)
			ev.List = listed(c)
			return ev
		}, Decision{Kind: KindPending, NextCheckAt: t0.Add(72 * time.Hour)}},
		{"no absence with a processor_ref", func(c *Charge) {
			c.ProcessorRef = "pi_1"
			c.Checks = []Check{emptyCheck(*c, 1, closed)}
		}, func(c Charge) Evidence {
			ev := evidenceAt(48 * time.Hour)
			ev.Retrieve = &Retrieval{ID: "pi_1", Failure: &ReadFailure{Class: retry.ClassRetry}}
			ev.List = listed(c)
			return ev
		}, Decision{Kind: KindPending, NextCheckAt: t0.Add(72 * time.Hour)}},
		{"window exhausted while processing", withRef, func(c Charge) Evidence {
			ev := evidenceAt(7 * 24 * time.Hour)
			in := intentFor("pi_1", "processing")
			ev.Retrieve = &Retrieval{ID: "pi_1", Intent: &in}
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonWindowExhausted, Path: PathRetrieve, PaymentIntent: "pi_1", Status: "processing"}},
		{"window exhausted with no evidence", func(c *Charge) {
			c.Checks = []Check{emptyCheck(*c, 1, 6*24*time.Hour)}
		}, func(c Charge) Evidence {
			ev := evidenceAt(7*24*time.Hour + time.Minute)
			ev.List = &Listing{Failure: &ReadFailure{Class: retry.ClassRetry}}
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonWindowExhausted}},
		{"first send unknown: the creation anchors the schedule", func(c *Charge) {
			c.FirstSentAt, c.LastSentAt, c.CreatedAt = time.Time{}, time.Time{}, t0
		}, func(c Charge) Evidence {
			ev := evidenceAt(31 * time.Second)
			ev.List = listed(c)
			return ev
		}, Decision{Kind: KindPending, NextCheckAt: t0.Add(5 * time.Minute)}},

		// Manual resolutions.
		{"evidence confirms the operator", func(c *Charge) { c.Manual = OutcomeSucceeded }, func(c Charge) Evidence {
			ev := evidenceAt(2 * time.Hour)
			ev.List = listed(c, intentFor("pi_1", "succeeded"))
			return ev
		}, Decision{Kind: KindPending, Outcome: OutcomeSucceeded, Path: PathList, PaymentIntent: "pi_1", Status: "succeeded"}},
		{"evidence contradicts the operator", func(c *Charge) { c.Manual = OutcomeFailed }, func(c Charge) Evidence {
			ev := evidenceAt(2 * time.Hour)
			ev.List = listed(c, intentFor("pi_1", "succeeded"))
			return ev
		}, Decision{Kind: KindReview, Reason: ReasonContradictsManual, Outcome: OutcomeSucceeded, Path: PathList, PaymentIntent: "pi_1", Status: "succeeded"}},
		{"no evidence after an operator decided", func(c *Charge) { c.Manual = OutcomeFailed }, func(c Charge) Evidence {
			ev := evidenceAt(closed)
			ev.List = listed(c)
			return ev
		}, Decision{Kind: KindPending, NextCheckAt: t0.Add(48 * time.Hour)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := pendingCharge()
			if tc.charge != nil {
				tc.charge(&c)
			}
			got := Decide(c, tc.ev(c), Policy{})
			got.Replay = ReplayVerdict{}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %s\nwant %s", jsonOf(t, got), jsonOf(t, tc.want))
			}
		})
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDecideReplayVerdict checks that every decision carries the replay verdict of its time.
func TestDecideReplayVerdict(t *testing.T) {
	t.Parallel()
	c := pendingCharge()
	for _, tc := range []struct {
		at   time.Duration
		want ReplayVerdict
	}{
		// The key closes 23 h after the creation, a second before the first send.
		{30 * time.Second, ReplayVerdict{Allowed: true, Reason: ReplayInsideKeyWindow, Until: c.CreatedAt.Add(processor.KeyWindow)}},
		{processor.KeyWindow, ReplayVerdict{Reason: ReplayKeyClosed, Until: c.CreatedAt.Add(processor.KeyWindow)}},
	} {
		d := Decide(c, evidenceAt(tc.at), Policy{})
		if d.Replay != tc.want {
			t.Errorf("at +%s: got %+v, want %+v", tc.at, d.Replay, tc.want)
		}
	}
}

// TestEvidenceJSON checks that a check survives the store's JSON round trip, and that the
// decision still reads the same from the decoded checks.
func TestEvidenceJSON(t *testing.T) {
	t.Parallel()
	c := pendingCharge()
	c.Checks = []Check{emptyCheck(c, 1, processor.KeyWindow+time.Hour)}
	ev := evidenceAt(48 * time.Hour)
	ev.List = listed(c)
	first := Decide(c, ev, Policy{})

	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Charge
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	second := Decide(back, ev, Policy{})
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("after a JSON round trip: got %s, want %s", jsonOf(t, second), jsonOf(t, first))
	}
	if first.Path != PathAbsence {
		t.Fatalf("path: got %q, want %q", first.Path, PathAbsence)
	}
}
