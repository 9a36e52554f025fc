package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap/zaptest"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/internal/sim"
	"github.com/paygate/paygate/jobs"
	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/retry"
	"github.com/paygate/paygate/store"
)

// gatedReads are the simulator's reads, which can fail every read (nothing conclusive) or
// hold the next list until released (a check in flight).
type gatedReads struct {
	*processor.Client
	mu      sync.Mutex
	fail    bool
	lagging bool          // the search answers, but its index does not show the charge yet
	entered chan struct{} // closed when a held list is reached
	release chan struct{} // the held list goes on when closed
}

var failedRead = processor.ReadResult{Outcome: retry.Outcome{Class: retry.ClassRetry}, Err: errors.New("test: read failed")}

func (g *gatedReads) failing() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fail
}

func (g *gatedReads) setFail(fail bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fail = fail
}

// hold makes the next list wait until the returned release function is called; entered is
// closed when it waits.
func (g *gatedReads) hold() (entered <-chan struct{}, release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	in, out := make(chan struct{}), make(chan struct{})
	g.entered, g.release = in, out
	return in, func() { close(out) }
}

func (g *gatedReads) Retrieve(ctx context.Context, id string) (processor.Intent, processor.ReadResult) {
	if g.failing() {
		return processor.Intent{}, failedRead
	}
	return g.Client.Retrieve(ctx, id)
}

func (g *gatedReads) ListByCreated(ctx context.Context, from, to time.Time, after string, limit int) (processor.IntentPage, processor.ReadResult) {
	g.mu.Lock()
	entered, release := g.entered, g.release
	g.entered, g.release = nil, nil
	g.mu.Unlock()
	if entered != nil {
		close(entered)
		<-release
	}
	if g.failing() {
		return processor.IntentPage{}, failedRead
	}
	return g.Client.ListByCreated(ctx, from, to, after, limit)
}

// setLagging makes every read but the search fail, and the search answer with nothing, as a
// search index that lags does: the processor answered, and settled nothing.
func (g *gatedReads) setLagging() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fail, g.lagging = true, true
}

func (g *gatedReads) SearchByCharge(ctx context.Context, id string) ([]processor.Intent, processor.ReadResult) {
	g.mu.Lock()
	lagging := g.lagging
	g.mu.Unlock()
	if lagging {
		return nil, processor.ReadResult{Outcome: retry.Outcome{Class: retry.ClassSuccess, HTTPStatus: 200}}
	}
	if g.failing() {
		return nil, failedRead
	}
	return g.Client.SearchByCharge(ctx, id)
}

// janitorBundle is a janitor on the test database and an in-process simulator.
type janitorBundle struct {
	ctx      context.Context
	db       *store.DB
	proc     *processor.Client
	reads    *gatedReads
	j        *reconcile.Janitor
	account  string
	merchant string
}

func setupJanitor(t *testing.T) *janitorBundle {
	t.Helper()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	s := sim.New(sim.Config{SearchLag: -1})
	ts := httptest.NewServer(s)
	t.Cleanup(func() { ts.Close(); s.Close() })
	log := zaptest.NewLogger(t)
	proc, err := processor.New(processor.Config{SecretKey: "sk_test_janitor", BaseURL: ts.URL, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	account, err := proc.Account(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := &janitorBundle{ctx: ctx, db: store.New(pool), proc: proc, reads: &gatedReads{Client: proc}, account: account,
		merchant: "m_" + charge.NewID()}
	b.j, err = reconcile.NewJanitor(reconcile.JanitorConfig{Store: b.db, Reconciler: reconcile.Config{Account: account, Reads: b.reads}, Log: log},
		jobs.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO merchants (id) VALUES ($1)`, b.merchant); err != nil {
		t.Fatal(err)
	}
	return b
}

// pending creates a charge of paymentMethod sent a minute ago whose outcome is unknown, and
// returns its id.
func (b *janitorBundle) pending(t *testing.T, paymentMethod string) string {
	t.Helper()
	id := charge.NewID()
	_, err := dbtest.Pool(t).Exec(b.ctx, `
		INSERT INTO charges (id, merchant_id, amount, currency, payment_method, initiator, status,
			processor_account, first_sent_at, created_at, updated_at, attempt_log, live)
		VALUES ($1, $2, 1000, 'usd', $3, 'customer', 'pending', $4,
			now() - interval '1 minute', now() - interval '1 minute', now(),
			jsonb_build_array(jsonb_build_array(1, (extract(epoch FROM now() - interval '1 minute') * 1000000)::bigint,
				4000, 4000, 'outcome_unknown', 0, '', '', 0, 0, 0, 0))::text, true)`,
		id, b.merchant, paymentMethod, b.account)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// pay makes the charge take effect at the processor now, under its own key.
func (b *janitorBundle) pay(t *testing.T, id, paymentMethod string) {
	t.Helper()
	a := b.proc.CreatePayment(b.ctx, processor.PaymentParams{Key: charge.ProcessorKey(id), ChargeID: id,
		Amount: 1000, Currency: "usd", PaymentMethod: paymentMethod})
	if a.PaymentIntent == "" {
		t.Fatalf("payment at the simulator: got %+v, want a PaymentIntent", a)
	}
}

// check runs one check of the charge and returns its decision.
func (b *janitorBundle) check(t *testing.T, id string) reconcile.Decision {
	t.Helper()
	chk, err := b.j.Check(b.ctx, id)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	return chk.Decision
}

// resolve resolves the charge by hand.
func (b *janitorBundle) resolve(id string, outcome charge.Status) error {
	_, err := b.j.Resolve(b.ctx, reconcile.ManualResolution{MerchantID: b.merchant, ChargeID: id, Outcome: outcome,
		Note: "test", Actor: "operator:test", Within: 10 * time.Minute})
	if err != nil {
		return fmt.Errorf("manual resolution: %w", err)
	}
	return nil
}

// lastCheck is the charge's last recorded reconciliation check.
func (b *janitorBundle) lastCheck(t *testing.T, id string) reconcile.Check {
	t.Helper()
	_, rec, err := b.db.ChargeTrail(b.ctx, b.merchant, id)
	if err != nil {
		t.Fatal(err)
	}
	if rec == nil || len(rec.Checks) == 0 {
		t.Fatal("no reconciliation check recorded")
	}
	var chk reconcile.Check
	if err := json.Unmarshal(rec.Checks[len(rec.Checks)-1], &chk); err != nil {
		t.Fatal(err)
	}
	return chk
}

// state is what an operator sees of a charge.
type state struct {
	status   charge.Status
	manual   string
	inReview bool
	top      bool // first in the review queue, rank 1, contradicting a manual resolution
	last     string
}

func (b *janitorBundle) state(t *testing.T, id string) state {
	t.Helper()
	c, err := b.db.Charge(b.ctx, b.merchant, id)
	if err != nil {
		t.Fatal(err)
	}
	events, rec, err := b.db.ChargeTrail(b.ctx, b.merchant, id)
	if err != nil {
		t.Fatal(err)
	}
	q, err := b.db.ReviewQueue(b.ctx, b.merchant, 10)
	if err != nil {
		t.Fatal(err)
	}
	st := state{status: c.Status, manual: rec.ManualOutcome, inReview: rec.InReview}
	if len(events) > 0 {
		st.last = events[len(events)-1].Action
	}
	st.top = len(q) > 0 && q[0].Charge.ID == id && q[0].Rank == 1 && q[0].Reason == string(reconcile.ReasonContradictsManual)
	return st
}

// TestReopenedChargeIsResolvedAgain checks that processor evidence contradicting an
// operator reopens the charge as an ordinary pending charge at the top of the review queue:
// the reopening ends the manual resolution, so conclusive evidence resolves the charge, and
// inconclusive evidence keeps it first in line and lets an operator resolve it again.
func TestReopenedChargeIsResolvedAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		lagging    bool // the reads answer and settle nothing
		wantKind   reconcile.Kind
		wantStatus charge.Status
		wantTop    bool
		resolve    charge.Status // a manual resolution after the check, when set
		wantFinal  charge.Status
		wantManual string
	}{
		{name: "conclusive evidence resolves it", wantKind: reconcile.KindResolve,
			wantStatus: charge.StatusSucceeded, wantFinal: charge.StatusSucceeded},
		{name: "inconclusive evidence lets an operator resolve it", lagging: true, wantKind: reconcile.KindPending,
			wantStatus: charge.StatusPending, wantTop: true, resolve: charge.StatusSucceeded,
			wantFinal: charge.StatusSucceeded, wantManual: "succeeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupJanitor(t)
			id := b.pending(t, "pm_card_visa")
			if d := b.check(t, id); d.Kind != reconcile.KindPending {
				t.Fatalf("first check: got %s, want pending (nothing at the processor yet)", d.Kind)
			}
			if err := b.resolve(id, charge.StatusFailed); err != nil {
				t.Fatal(err)
			}
			b.pay(t, id, "pm_card_visa")
			if d := b.check(t, id); d.Kind != reconcile.KindReview || d.Reason != reconcile.ReasonContradictsManual {
				t.Fatalf("check after the payment: got %s %s, want review %s", d.Kind, d.Reason, reconcile.ReasonContradictsManual)
			}
			want := state{status: charge.StatusPending, inReview: true, top: true, last: "reopened"}
			if got := b.state(t, id); got != want {
				t.Errorf("reopened: got %+v, want %+v (the manual resolution ended)", got, want)
			}

			if tc.lagging {
				b.reads.setLagging()
			}
			if d := b.check(t, id); d.Kind != tc.wantKind {
				t.Fatalf("check of the reopened charge: got %+v, want %s", d, tc.wantKind)
			}
			if got := b.state(t, id); got.status != tc.wantStatus || got.top != tc.wantTop || got.inReview != tc.wantTop {
				t.Fatalf("after the check: got %+v, want status %s, first in review %v", got, tc.wantStatus, tc.wantTop)
			}
			if tc.resolve != "" {
				if err := b.resolve(id, tc.resolve); err != nil {
					t.Fatalf("resolving the reopened charge after an inconclusive check: %v", err)
				}
			}
			if got := b.state(t, id); got.status != tc.wantFinal || got.inReview || got.manual != tc.wantManual {
				t.Fatalf("final: got %+v, want status %s out of review, manual %q", got, tc.wantFinal, tc.wantManual)
			}
		})
	}
}

// TestCheckInFlightWhileOperatorResolves checks that a check that read the charge before an
// operator resolved it never overwrites the operator: evidence of the same outcome only
// confirms it; evidence of another reopens the charge at the top of the review queue, as the
// same evidence found after the resolution would.
func TestCheckInFlightWhileOperatorResolves(t *testing.T) {
	t.Parallel()
	const visa, declined = "pm_card_visa", "pm_card_chargeDeclined"
	for _, tc := range []struct {
		name      string
		card      string // the processor succeeds (visa) or declines
		operator  charge.Status
		wantKind  reconcile.Kind
		want      state
		wantFinal charge.Status // after one more check
	}{
		{"processor succeeded, operator failed", visa, charge.StatusFailed, reconcile.KindReview,
			state{status: charge.StatusPending, inReview: true, top: true, last: "reopened"}, charge.StatusSucceeded},
		{"processor succeeded, operator succeeded", visa, charge.StatusSucceeded, reconcile.KindPending,
			state{status: charge.StatusSucceeded, manual: "succeeded", last: "manual_resolution"}, charge.StatusSucceeded},
		{"processor declined, operator succeeded", declined, charge.StatusSucceeded, reconcile.KindReview,
			state{status: charge.StatusPending, inReview: true, top: true, last: "reopened"}, charge.StatusDeclined},
		{"processor declined, operator declined", declined, charge.StatusDeclined, reconcile.KindPending,
			state{status: charge.StatusDeclined, manual: "declined", last: "manual_resolution"}, charge.StatusDeclined},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupJanitor(t)
			id := b.pending(t, tc.card)
			if d := b.check(t, id); d.Kind != reconcile.KindPending {
				t.Fatalf("first check: got %s, want pending (nothing at the processor yet)", d.Kind)
			}
			b.pay(t, id, tc.card)

			// A check reads the charge, pending, and waits in its processor reads while an
			// operator resolves the charge.
			entered, release := b.reads.hold()
			type result struct {
				chk reconcile.Check
				err error
			}
			done := make(chan result, 1)
			go func() {
				chk, err := b.j.Check(b.ctx, id)
				done <- result{chk, err}
			}()
			<-entered
			err := b.resolve(id, tc.operator)
			release()
			r := <-done
			if err != nil {
				t.Fatal(err)
			}
			if r.err != nil {
				t.Fatalf("check in flight: %v", r.err)
			}
			if rec := b.lastCheck(t, id); rec.N != r.chk.N || rec.Decision.Kind != tc.wantKind ||
				rec.Manual != reconcile.Outcome(tc.operator) {
				t.Errorf("recorded check in flight: got %d %s against %q, want %d %s against %q",
					rec.N, rec.Decision.Kind, rec.Manual, r.chk.N, tc.wantKind, tc.operator)
			}
			if got := b.state(t, id); got != tc.want {
				t.Fatalf("after the check in flight: got %+v, want %+v", got, tc.want)
			}
			b.check(t, id)
			if got := b.state(t, id); got.status != tc.wantFinal {
				t.Fatalf("after one more check: got %+v, want status %s", got, tc.wantFinal)
			}
		})
	}
}

// TestManualFailedKeepsTheCardsAttempt checks that an operator's "failed" leaves the charge's
// attempt in the card's history (an operator's judgement is not proof that nothing reached
// the card network), so that processor evidence found later — a decline that blocks the card
// — lands in the history the network rules read and the audit report counts.
func TestManualFailedKeepsTheCardsAttempt(t *testing.T) {
	t.Parallel()
	b := setupJanitor(t)
	const lost = "pm_card_chargeDeclinedLostCard"
	id := b.pending(t, lost)
	pool := dbtest.Pool(t)
	if _, err := pool.Exec(b.ctx, `UPDATE charges SET processor_account = $2, card_fingerprint = 'fp_manual',
		card_network = 'visa', card_at = now() - interval '1 minute', card_outcome = 'pending' WHERE id = $1 AND merchant_id = $3`,
		id, b.account, b.merchant); err != nil {
		t.Fatal(err)
	}
	cardAttempt := func() (outcome, class string) {
		t.Helper()
		err := pool.QueryRow(b.ctx, `SELECT outcome, COALESCE(class, '') FROM card_attempts WHERE charge_id = $1`, id).Scan(&outcome, &class)
		if errors.Is(err, pgx.ErrNoRows) {
			return "", ""
		}
		if err != nil {
			t.Fatal(err)
		}
		return outcome, class
	}
	if d := b.check(t, id); d.Kind != reconcile.KindPending {
		t.Fatalf("first check: got %s, want pending", d.Kind)
	}
	if err := b.resolve(id, charge.StatusFailed); err != nil {
		t.Fatal(err)
	}
	if o, _ := cardAttempt(); o != "pending" {
		t.Fatalf("card attempt after a manual failed: %q, want it kept, pending", o)
	}
	var unsettled *time.Time
	if err := pool.QueryRow(b.ctx, `SELECT settled_at FROM card_attempts WHERE charge_id = $1`, id).Scan(&unsettled); err != nil || unsettled != nil {
		t.Fatalf("settled_at of the pending attempt: %v (%v), want none", unsettled, err)
	}
	b.pay(t, id, lost)
	if d := b.check(t, id); d.Reason != reconcile.ReasonContradictsManual {
		t.Fatalf("check after the decline: got %s %s, want a reopening", d.Kind, d.Reason)
	}
	if d := b.check(t, id); d.Kind != reconcile.KindResolve {
		t.Fatalf("check of the reopened charge: got %+v, want it resolved", d)
	}
	if o, c := cardAttempt(); o != "declined" || c != "never" {
		t.Fatalf("card attempt after the decline was found: %q %q, want declined, never", o, c)
	}
	// The history says when the decline became known: the report tells an attempt sent
	// before that from one sent after.
	var settled *time.Time
	if err := pool.QueryRow(b.ctx, `SELECT settled_at FROM card_attempts WHERE charge_id = $1`, id).Scan(&settled); err != nil {
		t.Fatal(err)
	}
	if settled == nil || time.Since(*settled) > time.Minute {
		t.Fatalf("settled_at after the decline was found: %v, want the moment it was found", settled)
	}
}

// TestManualDeclineHasADeclineBlock checks that a charge an operator resolves as declined
// carries a decline block like any decline, naming the operator as its source, with the
// network rules' verdict on reattempting the card.
func TestManualDeclineHasADeclineBlock(t *testing.T) {
	t.Parallel()
	b := setupJanitor(t)
	id := b.pending(t, "pm_card_visa")
	if d := b.check(t, id); d.Kind != reconcile.KindPending {
		t.Fatalf("first check: got %s, want pending", d.Kind)
	}
	if err := b.resolve(id, charge.StatusDeclined); err != nil {
		t.Fatal(err)
	}
	c, err := b.db.Charge(b.ctx, b.merchant, id)
	if err != nil {
		t.Fatal(err)
	}
	var blk charge.DeclineJSON
	if err := json.Unmarshal(c.Decline, &blk); err != nil {
		t.Fatalf("decline block %q: %v", c.Decline, err)
	}
	if blk.Code != "resolved_declined_by_operator" || blk.Class == "" || blk.Evidence != nil {
		t.Fatalf("decline block: %s, want code resolved_declined_by_operator, a class, no processor evidence", c.Decline)
	}
}

// TestResolveNeedsACheckThatReachedTheProcessor checks that a check whose every read failed
// (the processor unreachable) does not open the way to a manual resolution: it found nothing
// because it saw nothing. A check that reached the processor and settled nothing does.
func TestResolveNeedsACheckThatReachedTheProcessor(t *testing.T) {
	t.Parallel()
	b := setupJanitor(t)
	id := b.pending(t, "pm_card_visa")
	b.reads.setFail(true)
	if d := b.check(t, id); d.Kind != reconcile.KindPending {
		t.Fatalf("check with every read failing: got %s, want pending", d.Kind)
	}
	if err := b.resolve(id, charge.StatusFailed); !errors.Is(err, reconcile.ErrReconcileFirst) {
		t.Fatalf("resolution after a check that reached nothing: got %v, want %v", err, reconcile.ErrReconcileFirst)
	}
	b.reads.setLagging()
	if d := b.check(t, id); d.Kind != reconcile.KindPending {
		t.Fatalf("check with a lagging search: got %s, want pending", d.Kind)
	}
	if err := b.resolve(id, charge.StatusFailed); err != nil {
		t.Fatalf("resolution after a check that reached the processor: %v", err)
	}
}

// TestReviewQueueOrderAndEvidence checks that the review queue lists charges of the same risk
// oldest charge first, whenever each entered review, each with every check made so far.
func TestReviewQueueOrderAndEvidence(t *testing.T) {
	t.Parallel()
	b := setupJanitor(t)
	mismatching := func(id string) {
		t.Helper()
		a := b.proc.CreatePayment(b.ctx, processor.PaymentParams{Key: charge.ProcessorKey(id), ChargeID: id,
			Amount: 901, Currency: "usd", PaymentMethod: "pm_card_visa"})
		if a.PaymentIntent == "" {
			t.Fatalf("payment at the simulator: %+v", a)
		}
	}
	newer, older := b.pending(t, "pm_card_visa"), b.pending(t, "pm_card_visa")
	if _, err := dbtest.Pool(t).Exec(b.ctx, `UPDATE charges SET created_at = created_at - interval '1 hour' WHERE id = $1`, older); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{newer, older} { // the newer charge enters review first
		if d := b.check(t, id); d.Kind != reconcile.KindPending {
			t.Fatalf("first check: got %s, want pending", d.Kind)
		}
		mismatching(id)
		if d := b.check(t, id); d.Reason != reconcile.ReasonMismatch {
			t.Fatalf("check of a mismatching payment: got %s %s, want review %s", d.Kind, d.Reason, reconcile.ReasonMismatch)
		}
	}
	q, err := b.db.ReviewQueue(b.ctx, b.merchant, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(q) != 2 || q[0].Charge.ID != older || q[1].Charge.ID != newer {
		t.Fatalf("review queue: %d items, want the older charge first", len(q))
	}
	for _, it := range q {
		if len(it.Checks) != 2 || string(it.Checks[1]) != string(it.Evidence) {
			t.Fatalf("charge %s: %d checks, want both, the last one the item's evidence", it.Charge.ID, len(it.Checks))
		}
		if it.Charge.ProcessorRef != "" {
			t.Fatalf("charge %s: processor_ref %s, want none: the PaymentIntent found does not match it", it.Charge.ID, it.Charge.ProcessorRef)
		}
	}
}

// TestResolutionRestoresTheCardAttempt checks that a charge with no attempt in its card's
// history (it was waiting for the cardholder's authentication, which is no authorization)
// gets one when reconciliation finds it authorized: the decline counts for the network rules
// from then on.
func TestResolutionRestoresTheCardAttempt(t *testing.T) {
	t.Parallel()
	b := setupJanitor(t)
	const lost = "pm_card_chargeDeclinedLostCard"
	id := b.pending(t, lost)
	pool := dbtest.Pool(t)
	if _, err := pool.Exec(b.ctx, `UPDATE charges SET card_fingerprint = 'fp_3ds', card_network = 'visa', chain = id,
		card_exp_month = 12, card_exp_year = 2034 WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	b.pay(t, id, lost)
	if d := b.check(t, id); d.Kind != reconcile.KindResolve || d.Outcome != reconcile.OutcomeDeclined {
		t.Fatalf("check: got %+v, want the decline resolved", d)
	}
	var outcome, class, fingerprint string
	if err := pool.QueryRow(b.ctx, `SELECT outcome, COALESCE(class, ''), fingerprint FROM card_attempts WHERE charge_id = $1`, id).
		Scan(&outcome, &class, &fingerprint); err != nil {
		t.Fatalf("card attempt after the decline was found: %v", err)
	}
	if outcome != "declined" || class != "never" || fingerprint != "fp_3ds" {
		t.Fatalf("card attempt: %s %s on %s, want declined, never, on fp_3ds", outcome, class, fingerprint)
	}
}

// TestReopenWhileAnotherChargeHoldsTheReference checks that processor evidence contradicting an
// operator's "failed" reopens the charge even when another live charge took its reference
// meanwhile (the checkout charged the order again): two payments for one order happened, and
// the charge goes first in line for a person, marked as a duplicate of the other, instead of
// its checks failing on the reference's uniqueness.
func TestReopenWhileAnotherChargeHoldsTheReference(t *testing.T) {
	t.Parallel()
	b := setupJanitor(t)
	pool := dbtest.Pool(t)
	first := b.pending(t, "pm_card_visa")
	if _, err := pool.Exec(b.ctx, `UPDATE charges SET reference = 'order-88' WHERE id = $1`, first); err != nil {
		t.Fatal(err)
	}
	if d := b.check(t, first); d.Kind != reconcile.KindPending {
		t.Fatalf("first check: got %s, want pending", d.Kind)
	}
	if err := b.resolve(first, charge.StatusFailed); err != nil {
		t.Fatal(err)
	}
	second := b.pending(t, "pm_card_visa")
	if _, err := pool.Exec(b.ctx, `UPDATE charges SET reference = 'order-88', status = 'succeeded', live = true WHERE id = $1`, second); err != nil {
		t.Fatal(err)
	}
	b.pay(t, first, "pm_card_visa")
	if d := b.check(t, first); d.Reason != reconcile.ReasonContradictsManual {
		t.Fatalf("check after the payment: got %s %s, want a reopening", d.Kind, d.Reason)
	}
	if got := b.state(t, first); !got.top || got.status != charge.StatusPending {
		t.Fatalf("reopened: got %+v, want pending, first in review", got)
	}
	var dupOf *string
	if err := pool.QueryRow(b.ctx, `SELECT reference_duplicate_of FROM charges WHERE id = $1`, first).Scan(&dupOf); err != nil {
		t.Fatal(err)
	}
	if dupOf == nil || *dupOf != second {
		t.Fatalf("reference_duplicate_of: %v, want %s", dupOf, second)
	}
	events, _, err := b.db.ChargeTrail(b.ctx, b.merchant, first)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range events {
		found = found || e.Action == "duplicate_reference"
	}
	if !found {
		t.Fatal("no duplicate_reference event in the charge's trail")
	}
	// The next check settles it: succeeded, and still first in line, for a refund.
	if d := b.check(t, first); d.Kind != reconcile.KindResolve || d.Outcome != reconcile.OutcomeSucceeded {
		t.Fatalf("check of the reopened charge: got %+v, want it resolved succeeded", d)
	}
	q, err := b.db.ReviewQueue(b.ctx, b.merchant, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(q) == 0 || q[0].Charge.ID != first || q[0].Rank != 1 || q[0].Reason != "duplicate_payment" ||
		q[0].Charge.Status != charge.StatusSucceeded || q[0].Charge.ReferenceDuplicateOf != second {
		t.Fatalf("review queue after the duplicate settled: %+v, want it first, rank 1, duplicate_payment of %s", q, second)
	}
}
