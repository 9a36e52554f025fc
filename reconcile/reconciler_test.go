package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"golang.org/x/time/rate"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/internal/sim"
	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/retry"
)

const simAccount = "acct_simReconcile1"

// shortTimeout is the client's deadline for a first attempt the simulator holds (a blackhole,
// a delay): long enough to write the request on a loaded machine, short for a test.
const shortTimeout = 250 * time.Millisecond

// clock is the database clock of a test, settable.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// memStore is a Store in memory that keeps the contract: one check per number, state
// changes with the check. Every charge stands pending, with no resolution and no review.
type memStore struct {
	mu       sync.Mutex
	checks   map[string][]reconcile.Check
	resolved map[string]reconcile.CheckPlan
	review   map[string]reconcile.CheckPlan
	next     map[string]time.Time
	resolves atomic.Int64
}

func newMemStore() *memStore {
	return &memStore{checks: map[string][]reconcile.Check{}, resolved: map[string]reconcile.CheckPlan{},
		review: map[string]reconcile.CheckPlan{}, next: map[string]time.Time{}}
}

func (s *memStore) append(id string, chk reconcile.Check) error {
	for _, old := range s.checks[id] {
		if old.N == chk.N {
			return fmt.Errorf("charge %s check %d: %w", id, chk.N, reconcile.ErrStale)
		}
	}
	s.checks[id] = append(s.checks[id], chk)
	return nil
}

func (s *memStore) RecordCheck(_ context.Context, q reconcile.StandingQuery, plan func(reconcile.Standing) (reconcile.CheckPlan, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := q.ChargeID
	p, err := plan(reconcile.Standing{Charge: &charge.Charge{ID: id, Status: charge.StatusPending}})
	if err != nil {
		return err
	}
	if err := s.append(id, p.Check); err != nil {
		return err
	}
	switch {
	case p.Resolve != nil && !p.Resolve.Reopen:
		s.resolved[id] = p
		delete(s.review, id)
		delete(s.next, id)
		s.resolves.Add(1)
	case p.Review:
		s.review[id] = p
		s.next[id] = p.NextCheckAt
	default:
		s.next[id] = p.NextCheckAt
	}
	return nil
}

func (s *memStore) checksOf(id string) []reconcile.Check {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]reconcile.Check(nil), s.checks[id]...)
}

var _ reconcile.Store = (*memStore)(nil)

// bundle is one test's simulator, processor client, store and reconciler, on one clock.
type bundle struct {
	sim    *sim.Server
	clock  *clock
	client *processor.Client
	store  *memStore
	rec    *reconcile.Reconciler
}

type options struct {
	simCfg   func(*sim.Config, *clock)
	replayer bool
	reads    func(reconcile.Reads) reconcile.Reads
}

func setup(t *testing.T, o options) *bundle {
	t.Helper()
	clk := &clock{t: time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)}
	cfg := sim.Config{AccountID: simAccount, Now: clk.Now, SearchLag: -1}
	if o.simCfg != nil {
		o.simCfg(&cfg, clk)
	}
	s := sim.New(cfg)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	t.Cleanup(s.Close)
	client, err := processor.New(processor.Config{SecretKey: "sk_test_reconcile", BaseURL: ts.URL, Log: zaptest.NewLogger(t).Named("processor")})
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{sim: s, clock: clk, client: client, store: newMemStore()}
	var reads reconcile.Reads = client
	if o.reads != nil {
		reads = o.reads(client)
	}
	rc := reconcile.Config{Account: simAccount, Reads: reads, Store: b.store, Now: clk.Now,
		ReadLimiter: rate.NewLimiter(rate.Inf, 1), SearchLimiter: rate.NewLimiter(rate.Inf, 1),
		Log: zaptest.NewLogger(t).Named("reconcile")}
	if o.replayer {
		rc.Replayer = replayer{client: client}
	}
	b.rec, err = reconcile.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replayer replays a test charge's request as the charge engine does: the same parameters
// under the same key.
type replayer struct{ client *processor.Client }

func (r replayer) Replay(ctx context.Context, chargeID string) processor.Attempt {
	return r.client.CreatePayment(ctx, paramsOf(chargeID, "pm_card_visa", 1999))
}

func paramsOf(chargeID, pm string, amount int64) processor.PaymentParams {
	return processor.PaymentParams{Key: "pg_" + chargeID, ChargeID: chargeID, Amount: amount, Currency: "usd",
		PaymentMethod: pm, Customer: "cus_test1", OffSession: true}
}

// send makes the first attempt of a charge under a scripted fault, within timeout, and
// returns the charge as the charge engine records it once the outcome is unknown.
func (b *bundle) send(t *testing.T, chargeID, pm string, step sim.Step, timeout time.Duration) reconcile.Charge {
	t.Helper()
	if err := b.sim.SetScript([]sim.Step{step}); err != nil {
		t.Fatal(err)
	}
	sent := b.clock.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	a := b.client.CreatePayment(ctx, paramsOf(chargeID, pm, 1999))
	if !a.Outcome.Class.Executed() {
		t.Fatalf("first attempt: got class %s (%v), want an unknown outcome", a.Outcome.Class, a.Err)
	}
	return reconcile.Charge{ID: chargeID, Amount: 1999, Currency: "usd", Customer: "cus_test1", PaymentMethod: pm,
		Account: simAccount, ProcessorRef: a.PaymentIntent, CreatedAt: sent, FirstSentAt: sent, LastSentAt: sent,
		Written: a.Writes > 0}
}

// reconcileAt runs one check of c at its first send plus d, with the checks recorded so far.
func (b *bundle) reconcileAt(t *testing.T, c reconcile.Charge, d time.Duration) reconcile.Check {
	t.Helper()
	b.clock.Set(c.FirstSentAt.Add(d))
	c.Checks = b.store.checksOf(c.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	chk, err := b.rec.Reconcile(ctx, c)
	if err != nil {
		t.Fatalf("Reconcile at +%s: %v", d, err)
	}
	return chk
}

// waitEffect waits (real time, bounded) until the simulator has executed the key.
func (b *bundle) waitEffect(t *testing.T, key string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range b.sim.Ledger() {
			if e.IdempotencyKey == key && e.Effects > 0 {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("key %s: no effect at the simulator", key)
}

func (b *bundle) effects(t *testing.T, key string) int {
	t.Helper()
	for _, e := range b.sim.Ledger() {
		if e.IdempotencyKey == key {
			return e.Effects
		}
	}
	return 0
}

// TestReconcileUnknownOutcomes produces each unknown outcome the simulator can make, then
// reconciles the charge.
func TestReconcileUnknownOutcomes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		pm          string
		step        sim.Step
		timeout     time.Duration
		waitEffect  bool
		wantKind    reconcile.Kind
		wantOutcome reconcile.Outcome
		wantPath    reconcile.Path
		wantDecline processor.Decline
		wantNext    time.Duration
	}{
		{name: "dropped response", pm: "pm_card_visa", step: sim.Step{DropResponse: true}, timeout: 5 * time.Second,
			wantKind: reconcile.KindResolve, wantOutcome: reconcile.OutcomeSucceeded, wantPath: reconcile.PathList},
		{name: "dropped response, declined", pm: "pm_sim_decline_insufficient_funds_visa_51", step: sim.Step{DropResponse: true},
			timeout: 5 * time.Second, wantKind: reconcile.KindResolve, wantOutcome: reconcile.OutcomeDeclined, wantPath: reconcile.PathList,
			wantDecline: processor.Decline{Code: "card_declined", DeclineCode: "insufficient_funds", NetworkDeclineCode: "51"}},
		{name: "500 after commit", pm: "pm_card_visa", step: sim.Step{Status: 500, AfterCommit: true}, timeout: 5 * time.Second,
			wantKind: reconcile.KindResolve, wantOutcome: reconcile.OutcomeSucceeded, wantPath: reconcile.PathList},
		{name: "500 after commit, declined", pm: "pm_card_chargeDeclinedLostCard", step: sim.Step{Status: 500, AfterCommit: true},
			timeout: 5 * time.Second, wantKind: reconcile.KindResolve, wantOutcome: reconcile.OutcomeDeclined, wantPath: reconcile.PathList,
			wantDecline: processor.Decline{Code: "card_declined", DeclineCode: "lost_card"}},
		{name: "timeout after send", pm: "pm_card_visa", step: sim.Step{DelayMS: 600}, timeout: shortTimeout, waitEffect: true,
			wantKind: reconcile.KindResolve, wantOutcome: reconcile.OutcomeSucceeded, wantPath: reconcile.PathList},
		{name: "blackhole", pm: "pm_card_visa", step: sim.Step{Blackhole: true}, timeout: shortTimeout,
			wantKind: reconcile.KindPending, wantNext: 5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, options{})
			c := b.send(t, "ch_unknown", tc.pm, tc.step, tc.timeout)
			if tc.waitEffect {
				b.waitEffect(t, "pg_ch_unknown")
			}
			chk := b.reconcileAt(t, c, 30*time.Second)
			d := chk.Decision
			if d.Kind != tc.wantKind || d.Outcome != tc.wantOutcome || d.Path != tc.wantPath {
				t.Fatalf("decision: got %s %s by %s (reason %s), want %s %s by %s", d.Kind, d.Outcome, d.Path, d.Reason,
					tc.wantKind, tc.wantOutcome, tc.wantPath)
			}
			if tc.wantKind == reconcile.KindResolve && d.PaymentIntent == "" {
				t.Error("payment intent: got none, want the one found")
			}
			if tc.wantDecline != (processor.Decline{}) {
				if d.Decline == nil {
					t.Fatalf("decline: got none, want %+v", tc.wantDecline)
				}
				got := *d.Decline
				got.Message = ""
				if got != tc.wantDecline {
					t.Errorf("decline: got %+v, want %+v", got, tc.wantDecline)
				}
			}
			if tc.wantNext != 0 && !d.NextCheckAt.Equal(c.FirstSentAt.Add(tc.wantNext)) {
				t.Errorf("next check: got %v, want +%s", d.NextCheckAt, tc.wantNext)
			}
			if chk.N != 1 || len(b.store.checksOf("ch_unknown")) != 1 {
				t.Errorf("checks: got number %d, %d recorded; want one, number 1", chk.N, len(b.store.checksOf("ch_unknown")))
			}
			if n := b.effects(t, "pg_ch_unknown"); n > 1 {
				t.Errorf("effects under the key: got %d, want at most 1", n)
			}
		})
	}
}

// TestReconcileBlackholeToAbsence follows a charge the processor never executed through the
// whole schedule: pending, then review when the 24 h rule closes the key, then failed by the
// authoritative absence — and nothing is ever written.
func TestReconcileBlackholeToAbsence(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	c := b.send(t, "ch_bh", "pm_card_visa", sim.Step{Blackhole: true}, shortTimeout)
	if c.ProcessorRef != "" || !c.Written {
		t.Fatalf("charge: got ref %q written %v, want no ref, written", c.ProcessorRef, c.Written)
	}
	day := 24 * time.Hour
	for _, step := range []struct {
		at         time.Duration
		wantKind   reconcile.Kind
		wantReason reconcile.Reason
		wantNext   time.Duration
	}{
		{30 * time.Second, reconcile.KindPending, "", 5 * time.Minute},
		{5 * time.Minute, reconcile.KindPending, "", time.Hour},
		{time.Hour, reconcile.KindPending, "", day},
		{day, reconcile.KindReview, reconcile.ReasonKeyClosedNoEvidence, 2 * day},
		{2 * day, reconcile.KindResolve, "", 0},
	} {
		chk := b.reconcileAt(t, c, step.at)
		d := chk.Decision
		if d.Kind != step.wantKind || d.Reason != step.wantReason {
			t.Fatalf("+%s: got %s %s, want %s %s", step.at, d.Kind, d.Reason, step.wantKind, step.wantReason)
		}
		if step.wantNext != 0 && !d.NextCheckAt.Equal(c.FirstSentAt.Add(step.wantNext)) {
			t.Fatalf("+%s: next check: got %v, want +%s", step.at, d.NextCheckAt, step.wantNext)
		}
		if chk.Evidence.List == nil || !chk.Evidence.List.Complete {
			t.Fatalf("+%s: list: got %+v, want a complete scan", step.at, chk.Evidence.List)
		}
	}
	p := b.store.resolved["ch_bh"].Check.Decision
	if p.Outcome != reconcile.OutcomeFailed || p.Path != reconcile.PathAbsence || !p.AbsentSince.Equal(c.FirstSentAt.Add(day)) {
		t.Fatalf("resolution: got %s by %s since %v, want failed by absence since +24h", p.Outcome, p.Path, p.AbsentSince)
	}
	for _, e := range b.sim.Ledger() {
		if e.IdempotencyKey == "pg_ch_bh" && (e.Requests != 1 || e.Effects != 0) {
			t.Fatalf("ledger: got %d requests %d effects, want the one blackholed request and no effect", e.Requests, e.Effects)
		}
	}
}

// TestReconcileReplay replays a blackholed key inside the 24 h rule, and never after it.
func TestReconcileReplay(t *testing.T) {
	t.Parallel()
	t.Run("inside the key window", func(t *testing.T) {
		t.Parallel()
		b := setup(t, options{replayer: true})
		c := b.send(t, "ch_rp", "pm_card_visa", sim.Step{Blackhole: true}, shortTimeout)
		d := b.reconcileAt(t, c, 30*time.Second).Decision
		if d.Kind != reconcile.KindResolve || d.Outcome != reconcile.OutcomeSucceeded || d.Path != reconcile.PathReplay {
			t.Fatalf("got %s %s by %s, want resolve succeeded by replay", d.Kind, d.Outcome, d.Path)
		}
		if n := b.effects(t, "pg_ch_rp"); n != 1 {
			t.Fatalf("effects: got %d, want 1", n)
		}
	})
	t.Run("after the key closed", func(t *testing.T) {
		t.Parallel()
		b := setup(t, options{replayer: true})
		c := b.send(t, "ch_rc", "pm_card_visa", sim.Step{Blackhole: true}, shortTimeout)
		d := b.reconcileAt(t, c, processor.KeyWindow).Decision
		if d.Kind != reconcile.KindReview || d.Reason != reconcile.ReasonKeyClosedNoEvidence || d.Replay.Allowed {
			t.Fatalf("got %s %s replay %+v, want review key closed, replay forbidden", d.Kind, d.Reason, d.Replay)
		}
		if n := b.effects(t, "pg_ch_rc"); n != 0 {
			t.Fatalf("effects: got %d, want 0: no write after the 24 h rule", n)
		}
	})
	t.Run("found by the reads: no replay", func(t *testing.T) {
		t.Parallel()
		b := setup(t, options{replayer: true})
		c := b.send(t, "ch_rf", "pm_card_visa", sim.Step{DropResponse: true}, 5*time.Second)
		chk := b.reconcileAt(t, c, 30*time.Second)
		if chk.Evidence.Replay != nil || chk.Decision.Path != reconcile.PathList {
			t.Fatalf("got replay %+v path %s, want no replay, found by list", chk.Evidence.Replay, chk.Decision.Path)
		}
	})
}

// TestReconcileSearchAfterLag has the processor's clock two hours ahead, beyond the list
// window's margins: only the search finds the PaymentIntent, once its index has caught up.
func TestReconcileSearchAfterLag(t *testing.T) {
	t.Parallel()
	b := setup(t, options{simCfg: func(cfg *sim.Config, clk *clock) {
		cfg.Now = func() time.Time { return clk.Now().Add(2 * time.Hour) }
		cfg.SearchLag = 5 * time.Minute
	}})
	c := b.send(t, "ch_lag", "pm_card_visa", sim.Step{DropResponse: true}, 5*time.Second)

	chk := b.reconcileAt(t, c, 30*time.Second)
	if d := chk.Decision; d.Kind != reconcile.KindPending {
		t.Fatalf("+30s: got %s %s, want pending", d.Kind, d.Reason)
	}
	if s := chk.Evidence.Search; s == nil || !s.Answered || !s.MayLag || len(s.Intents) != 0 {
		t.Fatalf("+30s: search: got %+v, want an empty answer that may lag", s)
	}
	chk = b.reconcileAt(t, c, 5*time.Minute+time.Second)
	if d := chk.Decision; d.Kind != reconcile.KindResolve || d.Outcome != reconcile.OutcomeSucceeded || d.Path != reconcile.PathSearch {
		t.Fatalf("+5m: got %s %s by %s, want resolve succeeded by search", d.Kind, d.Outcome, d.Path)
	}
	if chk.N != 2 {
		t.Fatalf("check number: got %d, want 2", chk.N)
	}
}

// TestReconcileRetrieve follows a PaymentIntent whose id is known while it is processing.
func TestReconcileRetrieve(t *testing.T) {
	t.Parallel()
	b := setup(t, options{simCfg: func(cfg *sim.Config, _ *clock) { cfg.ProcessingTime = 10 * time.Minute }})
	sent := b.clock.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a := b.client.CreatePayment(ctx, paramsOf("ch_proc", "pm_sim_processing", 1999))
	if a.Outcome.Class != retry.ClassUnknownFinal || a.Status != "processing" || a.PaymentIntent == "" {
		t.Fatalf("create: got class %s status %s pi %q, want unknown_final processing with an id", a.Outcome.Class, a.Status, a.PaymentIntent)
	}
	c := reconcile.Charge{ID: "ch_proc", Amount: 1999, Currency: "usd", Customer: "cus_test1", PaymentMethod: "pm_sim_processing",
		Account: simAccount, ProcessorRef: a.PaymentIntent, CreatedAt: sent, FirstSentAt: sent, Written: true}

	chk := b.reconcileAt(t, c, 30*time.Second)
	if d := chk.Decision; d.Kind != reconcile.KindPending || d.Path != reconcile.PathRetrieve || d.Status != "processing" {
		t.Fatalf("+30s: got %s by %s status %s, want pending by retrieve, processing", d.Kind, d.Path, d.Status)
	}
	if chk.Evidence.List != nil || chk.Evidence.Search != nil {
		t.Fatalf("+30s: got list %v search %v, want the retrieve alone", chk.Evidence.List, chk.Evidence.Search)
	}
	d := b.reconcileAt(t, c, time.Hour).Decision
	if d.Kind != reconcile.KindResolve || d.Outcome != reconcile.OutcomeSucceeded || d.Path != reconcile.PathRetrieve || d.PaymentIntent != a.PaymentIntent {
		t.Fatalf("+1h: got %s %s by %s (%s), want resolve succeeded by retrieve (%s)", d.Kind, d.Outcome, d.Path, d.PaymentIntent, a.PaymentIntent)
	}
}

// TestReconcileConflicts makes conflicting evidence at the processor.
func TestReconcileConflicts(t *testing.T) {
	t.Parallel()
	t.Run("two PaymentIntents carry the charge id", func(t *testing.T) {
		t.Parallel()
		b := setup(t, options{})
		c := b.send(t, "ch_two", "pm_card_visa", sim.Step{DropResponse: true}, 5*time.Second)
		// A second PaymentIntent with the same charge id under another key: a bug elsewhere.
		p := paramsOf("ch_two", "pm_card_visa", 1999)
		p.Key = "pg_ch_two_other"
		if a := b.client.CreatePayment(context.Background(), p); a.PaymentIntent == "" {
			t.Fatalf("second create: got no PaymentIntent (%s)", a.Outcome.Class)
		}
		d := b.reconcileAt(t, c, 30*time.Second).Decision
		if d.Kind != reconcile.KindReview || d.Reason != reconcile.ReasonDuplicate || len(d.PaymentIntents) != 2 {
			t.Fatalf("got %s %s %v, want review for two PaymentIntents", d.Kind, d.Reason, d.PaymentIntents)
		}
		if _, ok := b.store.review["ch_two"]; !ok {
			t.Fatal("store: the charge is not in review")
		}
	})
	t.Run("amount differs", func(t *testing.T) {
		t.Parallel()
		b := setup(t, options{})
		c := b.send(t, "ch_amt", "pm_card_visa", sim.Step{Status: 500, AfterCommit: true}, 5*time.Second)
		c.Amount = 2999
		d := b.reconcileAt(t, c, 30*time.Second).Decision
		if d.Kind != reconcile.KindReview || d.Reason != reconcile.ReasonMismatch || fmt.Sprint(d.Mismatch) != "[amount]" {
			t.Fatalf("got %s %s %v, want review for a mismatch in amount", d.Kind, d.Reason, d.Mismatch)
		}
	})
}

// countingReads counts the processor reads made.
type countingReads struct {
	reconcile.Reads
	calls atomic.Int64
}

func (r *countingReads) Retrieve(ctx context.Context, id string) (processor.Intent, processor.ReadResult) {
	r.calls.Add(1)
	return r.Reads.Retrieve(ctx, id)
}

func (r *countingReads) ListByCreated(ctx context.Context, from, to time.Time, after string, limit int) (processor.IntentPage, processor.ReadResult) {
	r.calls.Add(1)
	return r.Reads.ListByCreated(ctx, from, to, after, limit)
}

func (r *countingReads) SearchByCharge(ctx context.Context, id string) ([]processor.Intent, processor.ReadResult) {
	r.calls.Add(1)
	return r.Reads.SearchByCharge(ctx, id)
}

func TestReconcileOtherAccount(t *testing.T) {
	t.Parallel()
	counter := &countingReads{}
	b := setup(t, options{reads: func(r reconcile.Reads) reconcile.Reads { counter.Reads = r; return counter }})
	c := b.send(t, "ch_acct", "pm_card_visa", sim.Step{DropResponse: true}, 5*time.Second)
	c.Account = "acct_elsewhere"
	chk := b.reconcileAt(t, c, 30*time.Second)
	if d := chk.Decision; d.Kind != reconcile.KindReview || d.Reason != reconcile.ReasonOtherAccount || d.Replay.Allowed {
		t.Fatalf("got %s %s replay %+v, want review for another account, no replay", d.Kind, d.Reason, d.Replay)
	}
	if n := counter.calls.Load(); n != 0 {
		t.Fatalf("reads: got %d, want none at an account the charge was not sent to", n)
	}
}

func TestReconcileReadsFailing(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	c := b.send(t, "ch_down", "pm_card_visa", sim.Step{DropResponse: true}, 5*time.Second)
	if err := b.sim.SetFaults(sim.Faults{ErrorRate: 1, IncludeReads: true, Status: 503}); err != nil {
		t.Fatal(err)
	}
	chk := b.reconcileAt(t, c, 30*time.Second)
	if d := chk.Decision; d.Kind != reconcile.KindPending || !d.NextCheckAt.Equal(c.FirstSentAt.Add(5*time.Minute)) {
		t.Fatalf("got %s next %v, want pending until +5m", d.Kind, d.NextCheckAt)
	}
	ev := chk.Evidence
	if ev.List == nil || ev.List.Failure == nil || ev.List.Failure.HTTPStatus != 503 || ev.List.Complete {
		t.Fatalf("list: got %+v, want a 503 failure", ev.List)
	}
	if ev.Search == nil || ev.Search.Failure == nil || ev.Search.Answered {
		t.Fatalf("search: got %+v, want a failure", ev.Search)
	}
}

// TestReconcileRace runs two reconcilers on one charge at once: one check is recorded, the
// charge is resolved once, and the loser learns it with ErrStale.
func TestReconcileRace(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	other, err := reconcile.New(reconcile.Config{Account: simAccount, Reads: b.client, Store: b.store, Now: b.clock.Now,
		ReadLimiter: rate.NewLimiter(rate.Inf, 1), SearchLimiter: rate.NewLimiter(rate.Inf, 1)})
	if err != nil {
		t.Fatal(err)
	}
	c := b.send(t, "ch_race", "pm_card_visa", sim.Step{DropResponse: true}, 5*time.Second)
	b.clock.Set(c.FirstSentAt.Add(30 * time.Second))
	errs := make(chan error, 2)
	for _, r := range []*reconcile.Reconciler{b.rec, other} {
		go func() {
			_, err := r.Reconcile(context.Background(), c)
			errs <- err
		}()
	}
	var stale, ok int
	for range 2 {
		switch err := <-errs; {
		case err == nil:
			ok++
		case errors.Is(err, reconcile.ErrStale):
			stale++
		default:
			t.Fatalf("Reconcile: %v", err)
		}
	}
	if ok != 1 || stale != 1 || b.store.resolves.Load() != 1 || len(b.store.checksOf("ch_race")) != 1 {
		t.Fatalf("got %d recorded, %d stale, %d resolutions, %d checks; want 1, 1, 1, 1",
			ok, stale, b.store.resolves.Load(), len(b.store.checksOf("ch_race")))
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	store := newMemStore()
	var reads reconcile.Reads = &countingReads{}
	for _, tc := range []struct {
		name string
		cfg  reconcile.Config
	}{
		{"no account", reconcile.Config{Reads: reads, Store: store}},
		{"no reads", reconcile.Config{Account: "acct_1", Store: store}},
		{"no store", reconcile.Config{Account: "acct_1", Reads: reads}},
		{"bad schedule", reconcile.Config{Account: "acct_1", Reads: reads, Store: store,
			Policy: reconcile.Policy{Schedule: reconcile.Schedule{time.Hour, time.Minute}}}},
	} {
		if _, err := reconcile.New(tc.cfg); err == nil {
			t.Errorf("%s: got no error, want one", tc.name)
		}
	}
}
