package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap/zaptest"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/jobs"
	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/store"
)

// These tests run reconciliation checks the way the janitor runs them (its reconciler and
// its record of each decision) on the store of record, against a processor whose
// PaymentIntents are the test's: charges brought back to life by evidence found after an
// operator resolved them.

// scriptedReads is a processor account holding the PaymentIntents the test puts there.
type scriptedReads struct {
	mu      sync.Mutex
	intents []processor.Intent
	// during, when set, runs once inside the next list read: what happens while a check
	// is in flight.
	during func()
}

func (s *scriptedReads) add(in processor.Intent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.intents = append(s.intents, in)
}

func (s *scriptedReads) all() []processor.Intent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]processor.Intent(nil), s.intents...)
}

func (s *scriptedReads) Retrieve(_ context.Context, id string) (processor.Intent, processor.ReadResult) {
	for _, in := range s.all() {
		if in.ID == id {
			return in, answered
		}
	}
	return processor.Intent{}, processor.ReadResult{Outcome: answered.Outcome, NotFound: true}
}

func (s *scriptedReads) ListByCreated(context.Context, time.Time, time.Time, string, int) (processor.IntentPage, processor.ReadResult) {
	s.mu.Lock()
	during := s.during
	s.during = nil
	s.mu.Unlock()
	if during != nil {
		during()
	}
	return processor.IntentPage{Intents: s.all()}, answered
}

func (s *scriptedReads) SearchByCharge(_ context.Context, id string) ([]processor.Intent, processor.ReadResult) {
	var out []processor.Intent
	for _, in := range s.all() {
		if in.ChargeID == id {
			out = append(out, in)
		}
	}
	return out, answered
}

// reviveBundle is a merchant of its own, a card of its own and a janitor reading scripted
// PaymentIntents.
type reviveBundle struct {
	ctx      context.Context
	db       *store.DB
	reads    *scriptedReads
	j        *reconcile.Janitor
	merchant string
	fp       string
}

func setupRevive(t *testing.T) *reviveBundle {
	t.Helper()
	db, m := serviceMerchant(t)
	b := &reviveBundle{ctx: context.Background(), db: db, reads: &scriptedReads{}, merchant: m,
		fp: "fp_" + charge.NewID()[17:]}
	var err error
	b.j, err = reconcile.NewJanitor(reconcile.JanitorConfig{Store: db, Reconciler: reconcile.Config{Account: "acct_1", Reads: b.reads},
		Log: zaptest.NewLogger(t)}, jobs.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// chargeSpec is a charge to insert as its run left it, sent a minute ago.
type chargeSpec struct {
	status      charge.Status // pending, succeeded or declined
	amount      int64         // 1000 when zero
	reattemptOf string        // the charge it reattempts; its chain is then reattemptOf's
	reference   string
}

// insert writes the charge with its attempt and its card attempt, and returns its id.
func (b *reviveBundle) insert(t *testing.T, s chargeSpec) string {
	t.Helper()
	id := charge.NewID()
	chain := id
	if s.reattemptOf != "" {
		chain = s.reattemptOf
	}
	if s.amount == 0 {
		s.amount = 1000
	}
	outcome, declineBlock := map[charge.Status]string{charge.StatusPending: "pending",
		charge.StatusSucceeded: "approved", charge.StatusDeclined: "declined"}[s.status], []byte(nil)
	if s.status == charge.StatusDeclined {
		declineBlock = []byte(`{"code": "card_declined", "class": "generic"}`)
	}
	_, err := dbtest.Pool(t).Exec(b.ctx, `
		INSERT INTO charges (id, merchant_id, amount, currency, payment_method, reference, initiator, reattempt_of,
			chain, status, decline, processor_account, card_fingerprint, card_network,
			card_exp_month, card_exp_year, first_sent_at, created_at, updated_at, finalized_at, attempt_log,
			card_at, card_outcome, card_settled_at, live)
		VALUES ($1, $2, $3, 'usd', 'pm_card_visa', NULLIF($4, ''), 'customer', NULLIF($5, ''), $6, $7::text, $8,
			'acct_1', $9, 'visa', 12, 2034, now() - interval '1 minute', now() - interval '1 minute',
			now(), CASE WHEN $7 <> 'pending' THEN now() END,
			jsonb_build_array(jsonb_build_array(1, (extract(epoch FROM now() - interval '1 minute') * 1000000)::bigint,
				4000, 4000, CASE WHEN $7 = 'pending' THEN 'outcome_unknown' WHEN $7 = 'succeeded' THEN 'success' ELSE 'decline' END,
				0, '', '', 0, 0, 0, 0))::text,
			now() - interval '1 minute', $10::text, CASE WHEN $10 <> 'pending' THEN now() END,
			$7 IN ('processing', 'pending', 'succeeded'))`,
		id, b.merchant, s.amount, s.reference, s.reattemptOf, chain, string(s.status), declineBlock, b.fp, outcome)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// pay puts a succeeded PaymentIntent for the charge at the processor, for amount (the
// charge's when zero); root is the chain's original for a reattempt.
func (b *reviveBundle) pay(t *testing.T, id, root string, amount int64) string {
	t.Helper()
	c := b.charge(t, id)
	if amount == 0 {
		amount = c.Amount
	}
	pi := "pi_" + charge.NewID()[3:]
	b.reads.add(processor.Intent{ID: pi, Status: "succeeded", Amount: amount, Currency: c.Currency,
		PaymentMethod: c.PaymentMethod, ChargeID: id, RootChargeID: root, Created: time.Now().Truncate(time.Second)})
	return pi
}

// check runs one reconciliation check of the charge and returns its decision as the store
// recorded it (against the operator's resolution when one was made while it ran).
func (b *reviveBundle) check(t *testing.T, id string) reconcile.Decision {
	t.Helper()
	chk, err := b.j.Check(b.ctx, id)
	if err != nil {
		t.Fatalf("check of %s: %v", id, err)
	}
	_, rec, err := b.db.ChargeTrail(b.ctx, b.merchant, id)
	if err != nil {
		t.Fatal(err)
	}
	if rec == nil || len(rec.Checks) != chk.N {
		t.Fatalf("check %d of %s: not recorded", chk.N, id)
	}
	var got reconcile.Check
	if err := json.Unmarshal(rec.Checks[chk.N-1], &got); err != nil {
		t.Fatal(err)
	}
	return got.Decision
}

// resolve resolves the charge by hand.
func (b *reviveBundle) resolve(t *testing.T, id string, outcome charge.Status) {
	t.Helper()
	if _, err := reconcile.Resolve(b.ctx, b.db, reconcile.ManualResolution{MerchantID: b.merchant, ChargeID: id,
		Outcome: outcome, Note: "test", Actor: "operator:test", Within: 10 * time.Minute}); err != nil {
		t.Fatalf("manual resolution of %s as %s: %v", id, outcome, err)
	}
}

// resolvedByHand runs the check that finds nothing at the processor and resolves the charge
// by hand as outcome.
func (b *reviveBundle) resolvedByHand(t *testing.T, id string, outcome charge.Status) {
	t.Helper()
	if d := b.check(t, id); d.Kind != reconcile.KindPending {
		t.Fatalf("first check of %s: got %s %s, want pending (nothing at the processor yet)", id, d.Kind, d.Reason)
	}
	b.resolve(t, id, outcome)
}

func (b *reviveBundle) charge(t *testing.T, id string) *charge.Charge {
	t.Helper()
	c, err := b.db.Charge(b.ctx, b.merchant, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// top returns the first item of the merchant's review queue.
func (b *reviveBundle) top(t *testing.T) reconcile.ReviewItem {
	t.Helper()
	q, err := b.db.ReviewQueue(b.ctx, b.merchant, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(q) == 0 {
		t.Fatal("review queue: empty, want the revived charge in it")
	}
	return q[0]
}

// event returns the charge's last event of action, failing the test when there is none.
func (b *reviveBundle) event(t *testing.T, id, action string) charge.Event {
	t.Helper()
	events, _, err := b.db.ChargeTrail(b.ctx, b.merchant, id)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Action == action {
			return events[i]
		}
	}
	t.Fatalf("trail of %s: no %s event", id, action)
	return charge.Event{}
}

// cardAttempt is the charge's attempt in its card's history.
func (b *reviveBundle) cardAttempt(t *testing.T, id string) (outcome string, settled bool) {
	t.Helper()
	err := dbtest.Pool(t).QueryRow(b.ctx, `SELECT outcome, settled_at IS NOT NULL FROM card_attempts WHERE charge_id = $1`,
		id).Scan(&outcome, &settled)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return outcome, settled
}

// TestRevivedChargeDuplicatesTheLiveChargeOfItsChain checks that a charge an operator
// resolved declined, reattempted meanwhile, which the processor then shows paid, is recorded
// as a second payment for one order: reopened and marked as the duplicate of the chain's live
// charge (reviving a reattempt does not break the one-live-reattempt rule), and, once proven
// paid, first in the review queue as duplicate_payment.
func TestRevivedChargeDuplicatesTheLiveChargeOfItsChain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		reference string
		// revivedIsReattempt: the revived charge is itself a reattempt of a declined
		// original, and a later reattempt succeeded.
		revivedIsReattempt bool
	}{
		{name: "original revived while its reattempt succeeded"},
		{name: "reattempt revived while a later reattempt succeeded", revivedIsReattempt: true},
		{name: "original with a reference revived", reference: "order-7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupRevive(t)
			var revived, root, live string
			if tc.revivedIsReattempt {
				root = b.insert(t, chargeSpec{status: charge.StatusDeclined, reference: tc.reference})
				revived = b.insert(t, chargeSpec{status: charge.StatusPending, reattemptOf: root, reference: tc.reference})
			} else {
				revived = b.insert(t, chargeSpec{status: charge.StatusPending, reference: tc.reference})
			}
			b.resolvedByHand(t, revived, charge.StatusDeclined)
			chain := revived
			if root != "" {
				chain = root
			}
			live = b.insert(t, chargeSpec{status: charge.StatusSucceeded, reattemptOf: chain, reference: tc.reference})

			pi := b.pay(t, revived, root, 0)
			if d := b.check(t, revived); d.Kind != reconcile.KindReview || d.Reason != reconcile.ReasonContradictsManual {
				t.Fatalf("check after the payment: got %s %s, want review %s", d.Kind, d.Reason, reconcile.ReasonContradictsManual)
			}
			c := b.charge(t, revived)
			if c.Status != charge.StatusPending || c.ReattemptDuplicateOf != live {
				t.Fatalf("reopened: status %s, reattempt_duplicate_of %q; want pending, %s", c.Status, c.ReattemptDuplicateOf, live)
			}
			if wantRef := map[bool]string{true: live}[tc.reference != ""]; c.ReferenceDuplicateOf != wantRef {
				t.Errorf("reopened: reference_duplicate_of %q, want %q", c.ReferenceDuplicateOf, wantRef)
			}
			if e := b.event(t, revived, "duplicate_reattempt"); !strings.Contains(e.Note, live) || e.StatusAfter != "pending" {
				t.Errorf("duplicate_reattempt event: note %q, status after %q; want it naming %s, pending", e.Note, e.StatusAfter, live)
			}
			if it := b.top(t); it.Charge.ID != revived || it.Rank != 1 || it.Reason != string(reconcile.ReasonContradictsManual) {
				t.Errorf("review queue after the reopening: first %s rank %d %s, want %s rank 1 %s",
					it.Charge.ID, it.Rank, it.Reason, revived, reconcile.ReasonContradictsManual)
			}

			// The next check proves it paid: succeeded, and first in line for a refund.
			if d := b.check(t, revived); d.Kind != reconcile.KindResolve || d.Outcome != reconcile.OutcomeSucceeded {
				t.Fatalf("check of the reopened charge: got %+v, want it resolved succeeded", d)
			}
			it := b.top(t)
			if it.Charge.ID != revived || it.Rank != 1 || it.Reason != reconcile.ReasonDuplicatePayment ||
				it.Charge.Status != charge.StatusSucceeded || it.Charge.ReattemptDuplicateOf != live {
				t.Fatalf("review queue after the duplicate settled: first %s rank %d %s %s duplicate of %q; want %s rank 1 %s succeeded duplicate of %s",
					it.Charge.ID, it.Rank, it.Reason, it.Charge.Status, it.Charge.ReattemptDuplicateOf,
					revived, reconcile.ReasonDuplicatePayment, live)
			}
			if it.Charge.ProcessorRef != pi {
				t.Errorf("processor_ref: got %q, want %s, the charge's own PaymentIntent", it.Charge.ProcessorRef, pi)
			}
			if l := b.charge(t, live); l.Status != charge.StatusSucceeded || l.ReattemptDuplicateOf != "" {
				t.Errorf("the live charge: %s, duplicate of %q; want it untouched, succeeded", l.Status, l.ReattemptDuplicateOf)
			}
		})
	}
}

// TestOperatorRevivesChargeOfALiveChain checks that an operator resolving succeeded a
// declined charge in review, while another charge of its chain is live, records the duplicate
// as reconciliation does: marked, with its event, the one-live-reattempt rule holding.
func TestOperatorRevivesChargeOfALiveChain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name               string
		revivedIsReattempt bool
	}{
		{name: "original"},
		{name: "reattempt", revivedIsReattempt: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupRevive(t)
			var revived, root string
			if tc.revivedIsReattempt {
				root = b.insert(t, chargeSpec{status: charge.StatusDeclined})
				revived = b.insert(t, chargeSpec{status: charge.StatusPending, reattemptOf: root})
			} else {
				revived = b.insert(t, chargeSpec{status: charge.StatusPending})
			}
			b.resolvedByHand(t, revived, charge.StatusDeclined)
			chain := revived
			if root != "" {
				chain = root
			}
			live := b.insert(t, chargeSpec{status: charge.StatusSucceeded, reattemptOf: chain})
			// Two PaymentIntents carry the charge id: a person must look; the charge stays
			// declined, in review.
			b.pay(t, revived, root, 0)
			b.pay(t, revived, root, 0)
			if d := b.check(t, revived); d.Kind != reconcile.KindReview || d.Reason != reconcile.ReasonDuplicate {
				t.Fatalf("check with two PaymentIntents: got %s %s, want review %s", d.Kind, d.Reason, reconcile.ReasonDuplicate)
			}
			if c := b.charge(t, revived); c.Status != charge.StatusDeclined {
				t.Fatalf("after the check: %s, want declined (in review)", c.Status)
			}
			b.resolve(t, revived, charge.StatusSucceeded)
			c := b.charge(t, revived)
			if c.Status != charge.StatusSucceeded || c.ReattemptDuplicateOf != live || c.Decline != nil {
				t.Fatalf("resolved succeeded: %s, reattempt_duplicate_of %q, decline %s; want succeeded, %s, no decline block",
					c.Status, c.ReattemptDuplicateOf, c.Decline, live)
			}
			if e := b.event(t, revived, "duplicate_reattempt"); !strings.Contains(e.Note, live) {
				t.Errorf("duplicate_reattempt event: note %q, want it naming %s", e.Note, live)
			}
		})
	}
}

// TestRevivedChargeFollowsTheEvidence checks that a charge an operator resolved declined,
// which the processor shows succeeded, loses its decline block as soon as it is reopened
// (only a declined charge carries one), and that its card attempt follows: pending while
// reopened, approved once proven paid. The same holds when the check was running while the
// operator resolved it.
func TestRevivedChargeFollowsTheEvidence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		inFlight bool
	}{
		{name: "evidence found after the resolution"},
		{name: "check in flight while the operator resolves", inFlight: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupRevive(t)
			id := b.insert(t, chargeSpec{status: charge.StatusPending})
			if tc.inFlight {
				if d := b.check(t, id); d.Kind != reconcile.KindPending {
					t.Fatalf("first check: got %s, want pending", d.Kind)
				}
				b.pay(t, id, "", 0)
				b.reads.during = func() { b.resolve(t, id, charge.StatusDeclined) }
			} else {
				b.resolvedByHand(t, id, charge.StatusDeclined)
				if c := b.charge(t, id); c.Decline == nil {
					t.Fatal("resolved declined: no decline block")
				}
				if o, settled := b.cardAttempt(t, id); o != "declined" || !settled {
					t.Fatalf("card attempt resolved declined: %q (settled %v), want declined, settled", o, settled)
				}
				b.pay(t, id, "", 0)
			}
			if d := b.check(t, id); d.Kind != reconcile.KindReview || d.Reason != reconcile.ReasonContradictsManual {
				t.Fatalf("check after the payment: got %s %s, want review %s", d.Kind, d.Reason, reconcile.ReasonContradictsManual)
			}
			if c := b.charge(t, id); c.Status != charge.StatusPending || c.Decline != nil || c.Failure != nil {
				t.Errorf("reopened: %s, decline %s, failure %+v; want pending, neither", c.Status, c.Decline, c.Failure)
			}
			if o, settled := b.cardAttempt(t, id); o != "pending" || settled {
				t.Errorf("card attempt reopened: %q (settled %v), want pending, unsettled", o, settled)
			}
			if d := b.check(t, id); d.Kind != reconcile.KindResolve || d.Outcome != reconcile.OutcomeSucceeded {
				t.Fatalf("check of the reopened charge: got %+v, want it resolved succeeded", d)
			}
			if c := b.charge(t, id); c.Status != charge.StatusSucceeded || c.Decline != nil || c.Failure != nil {
				t.Errorf("succeeded: %s, decline %s, failure %+v; want succeeded, neither", c.Status, c.Decline, c.Failure)
			}
			if o, settled := b.cardAttempt(t, id); o != "approved" || !settled {
				t.Errorf("card attempt succeeded: %q (settled %v), want approved, settled", o, settled)
			}
		})
	}
}

// TestMismatchingPaymentIntentIsNeverTheProcessorRef checks that a succeeded PaymentIntent
// that carries the charge id but not the charge's amount, found after an operator resolved
// the charge failed, reopens it first in line with the mismatch named, and never becomes its
// processor_ref — whether the check read the charge before or after the resolution.
func TestMismatchingPaymentIntentIsNeverTheProcessorRef(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		inFlight bool
	}{
		{name: "evidence found after the resolution"},
		{name: "check in flight while the operator resolves", inFlight: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupRevive(t)
			id := b.insert(t, chargeSpec{status: charge.StatusPending, amount: 2008})
			if tc.inFlight {
				if d := b.check(t, id); d.Kind != reconcile.KindPending {
					t.Fatalf("first check: got %s, want pending", d.Kind)
				}
				b.pay(t, id, "", 5555)
				b.reads.during = func() { b.resolve(t, id, charge.StatusFailed) }
			} else {
				b.resolvedByHand(t, id, charge.StatusFailed)
				b.pay(t, id, "", 5555)
			}
			d := b.check(t, id)
			if d.Reason != reconcile.ReasonContradictsManual || len(d.Mismatch) != 1 || d.Mismatch[0] != "amount" {
				t.Fatalf("check of the mismatching payment: got %s %s mismatch %v, want review %s mismatch [amount]",
					d.Kind, d.Reason, d.Mismatch, reconcile.ReasonContradictsManual)
			}
			c := b.charge(t, id)
			if c.Status != charge.StatusPending {
				t.Errorf("status: got %s, want pending (reopened)", c.Status)
			}
			if c.ProcessorRef != "" {
				t.Errorf("processor_ref: got %s, want none: the PaymentIntent found does not match the charge", c.ProcessorRef)
			}
			if it := b.top(t); it.Charge.ID != id || it.Rank != 1 {
				t.Errorf("review queue: first %s rank %d, want %s rank 1", it.Charge.ID, it.Rank, id)
			}
			var chk reconcile.Check
			if err := json.Unmarshal(b.top(t).Evidence, &chk); err != nil || len(chk.Decision.Mismatch) == 0 {
				t.Errorf("review evidence: %v, mismatch %v; want the mismatch named", err, chk.Decision.Mismatch)
			}
		})
	}
}
