package reconcile_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/jobs"
	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/reconcile"
)

// opReads counts the processor reads the janitor makes, by operation.
type opReads struct {
	reconcile.Reads
	retrieve, list, search atomic.Int64
}

// total is how many reads were made, of every operation.
func (o *opReads) total() int64 { return o.retrieve.Load() + o.list.Load() + o.search.Load() }

func (o *opReads) Retrieve(ctx context.Context, id string) (processor.Intent, processor.ReadResult) {
	o.retrieve.Add(1)
	return o.Reads.Retrieve(ctx, id)
}

func (o *opReads) ListByCreated(ctx context.Context, from, to time.Time, after string, limit int) (processor.IntentPage, processor.ReadResult) {
	o.list.Add(1)
	return o.Reads.ListByCreated(ctx, from, to, after, limit)
}

func (o *opReads) SearchByCharge(ctx context.Context, id string) ([]processor.Intent, processor.ReadResult) {
	o.search.Add(1)
	return o.Reads.SearchByCharge(ctx, id)
}

// sweeps is a janitor bundle whose reads are counted by operation, with list pages of
// pageSize.
type sweeps struct {
	*janitorBundle
	reads *opReads
}

func setupSweeps(t *testing.T, pageSize int) *sweeps {
	t.Helper()
	b := setupJanitor(t)
	s := &sweeps{janitorBundle: b, reads: &opReads{Reads: b.reads}}
	var err error
	b.j, err = reconcile.NewJanitor(reconcile.JanitorConfig{Store: b.db, Log: zaptest.NewLogger(t),
		Reconciler: reconcile.Config{Account: b.account, Reads: s.reads, ListPageSize: pageSize}}, jobs.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// due makes the charges' next check due now.
func (b *janitorBundle) due(t *testing.T, ids ...string) {
	t.Helper()
	if _, err := dbtest.Pool(t).Exec(b.ctx, `
		INSERT INTO reconciliations (charge_id, next_check_at) SELECT id, clock_timestamp() - interval '1 second' FROM unnest($1::text[]) id
		ON CONFLICT (charge_id) DO UPDATE SET next_check_at = EXCLUDED.next_check_at`, ids); err != nil {
		t.Fatal(err)
	}
}

// checks returns how many checks each charge has.
func (b *janitorBundle) checks(t *testing.T, ids []string) map[string]int {
	t.Helper()
	rows, err := dbtest.Pool(t).Query(b.ctx, `SELECT charge_id, count(*) FROM reconciliation_checks WHERE charge_id = ANY($1) GROUP BY charge_id`, ids)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		out[id] = n
	}
	return out
}

// TestSweepSettlesMany: one sweep of an account checks every due charge whose PaymentIntent id
// is unknown with one list pass over their send windows: each charge gets one check on the
// shared listing; the charges the listing finds are settled with their PaymentIntent, the one
// it does not find gets the search a single check makes and stays pending. A charge whose id
// is known, or of another account, is not swept; the swept charges are not due again.
func TestSweepSettlesMany(t *testing.T) {
	t.Parallel()
	s := setupSweeps(t, 100)
	const paid = 60
	var ids []string
	for i := range paid + 1 {
		id := s.pending(t, "pm_card_visa")
		if i < paid {
			s.pay(t, id, "pm_card_visa")
		}
		ids = append(ids, id)
	}
	known := s.pending(t, "pm_card_visa")
	s.pay(t, known, "pm_card_visa")
	if _, err := dbtest.Pool(t).Exec(s.ctx, `UPDATE charges SET processor_ref = 'pi_known' WHERE id = $1`, known); err != nil {
		t.Fatal(err)
	}
	other := s.pending(t, "pm_card_visa")
	if _, err := dbtest.Pool(t).Exec(s.ctx, `UPDATE charges SET processor_account = 'acct_other' WHERE id = $1`, other); err != nil {
		t.Fatal(err)
	}
	s.due(t, append([]string{known, other}, ids...)...)

	res, err := s.j.SweepAccount(s.ctx, s.account)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Checks) != paid+1 || res.Settled() != paid || res.Spans != 1 || res.Stale != 0 {
		t.Fatalf("sweep: got %d checks, %d settled, %d spans, %d stale; want %d, %d, 1, 0",
			len(res.Checks), res.Settled(), res.Spans, res.Stale, paid+1, paid)
	}
	// The simulator holds the paid charges' PaymentIntents (and the known one's): one page.
	if l, sr, rt := s.reads.list.Load(), s.reads.search.Load(), s.reads.retrieve.Load(); l != 1 || sr != 1 || rt != 0 {
		t.Fatalf("reads: got %d list pages, %d searches, %d retrieves; want 1, 1 (the charge not found), 0", l, sr, rt)
	}
	if got := s.checks(t, append([]string{known, other}, ids...)); len(got) != paid+1 || got[known] != 0 || got[other] != 0 {
		t.Fatalf("checks per charge: got %v, want one for each swept charge, none for the others", got)
	}
	for i, id := range ids {
		c, err := s.db.Charge(s.ctx, s.merchant, id)
		if err != nil {
			t.Fatal(err)
		}
		chk := s.lastCheck(t, id)
		l := chk.Evidence.List
		if l == nil || l.Sweep == nil || l.Sweep.Charges != paid+1 || !l.Complete || l.Pages != 1 {
			t.Fatalf("%s: listing %+v, want the sweep's complete pass over %d charges", id, l, paid+1)
		}
		if i < paid {
			if c.Status != charge.StatusSucceeded || c.ProcessorRef == "" || chk.Decision.Path != reconcile.PathList {
				t.Fatalf("%s: got %s ref %q path %s, want succeeded by the listing with its PaymentIntent", id, c.Status, c.ProcessorRef, chk.Decision.Path)
			}
			continue
		}
		if c.Status != charge.StatusPending || chk.Decision.Kind != reconcile.KindPending || chk.Evidence.Search == nil || len(l.Intents) != 0 {
			t.Fatalf("%s: got %s, decision %+v, search %+v; want pending after the listing and the search", id, c.Status, chk.Decision, chk.Evidence.Search)
		}
	}
	if again, err := s.j.SweepAccount(s.ctx, s.account); err != nil || len(again.Checks) != 0 || again.Pages != 0 {
		t.Fatalf("a second sweep: got %d checks, %d pages, %v; want nothing due", len(again.Checks), again.Pages, err)
	}
}

// TestSweepPagesThrough: a window larger than a page is read with the cursor until its end;
// every charge is settled from the pages, one check each.
func TestSweepPagesThrough(t *testing.T) {
	t.Parallel()
	s := setupSweeps(t, 7)
	var ids []string
	for range 30 {
		id := s.pending(t, "pm_card_visa")
		s.pay(t, id, "pm_card_visa")
		ids = append(ids, id)
	}
	s.due(t, ids...)
	res, err := s.j.SweepAccount(s.ctx, s.account)
	if err != nil {
		t.Fatal(err)
	}
	if res.Settled() != 30 || res.Pages != 5 || s.reads.list.Load() != 5 || s.reads.search.Load() != 0 {
		t.Fatalf("sweep: got %d settled, %d pages (%d listed, %d searches); want 30 from 5 pages of 7, no search",
			res.Settled(), res.Pages, s.reads.list.Load(), s.reads.search.Load())
	}
	for id, n := range s.checks(t, ids) {
		if n != 1 {
			t.Fatalf("%s: %d checks, want 1", id, n)
		}
	}
}

// TestSweepClaims: sweeps running at once take disjoint charges: each charge is checked once.
// A claim holds the charges until its lease ends; then they are due again.
func TestSweepClaims(t *testing.T) {
	t.Parallel()
	s := setupSweeps(t, 100)
	var ids []string
	for range 40 {
		id := s.pending(t, "pm_card_visa")
		s.pay(t, id, "pm_card_visa")
		ids = append(ids, id)
	}
	s.due(t, ids...)
	var (
		wg    sync.WaitGroup
		total atomic.Int64
	)
	start := make(chan struct{})
	for range 3 {
		wg.Go(func() {
			<-start
			res, err := s.j.SweepAccount(s.ctx, s.account)
			if err != nil {
				t.Error(err)
			}
			total.Add(int64(len(res.Checks) + res.Stale))
		})
	}
	close(start)
	wg.Wait()
	if total.Load() != 40 {
		t.Fatalf("checks by three sweeps at once: got %d, want 40", total.Load())
	}
	for id, n := range s.checks(t, ids) {
		if n != 1 {
			t.Fatalf("%s: %d checks, want 1", id, n)
		}
	}

	// A sweep that dies after its claim: its charges are held until the lease ends.
	var more []string
	for range 3 {
		more = append(more, s.pending(t, "pm_card_visa"))
	}
	s.due(t, more...)
	claimed, err := s.db.ClaimSweep(s.ctx, s.account, 10, time.Hour)
	if err != nil || len(claimed) != 3 {
		t.Fatalf("claim: got %v, %v; want the 3 due charges", claimed, err)
	}
	if again, err := s.db.ClaimSweep(s.ctx, s.account, 10, time.Hour); err != nil || len(again) != 0 {
		t.Fatalf("claim while held: got %v, %v; want none", again, err)
	}
	if _, err := s.db.ClaimSweep(s.ctx, "acct_other", 10, time.Hour); err != nil {
		t.Fatal(err)
	}
	s.due(t, more...) // the lease ends
	again, err := s.db.ClaimSweep(s.ctx, s.account, 2, -time.Second)
	if err != nil || len(again) != 2 || !slices.ContainsFunc(more, func(id string) bool { return slices.Contains(again, id) }) {
		t.Fatalf("claim after the lease: got %v, %v; want 2 of %v", again, err, more)
	}
}

// TestJanitorEnqueuesSweeps: the periodic enqueue gives a charge whose PaymentIntent id is
// known a check of its own, and the charges whose id is unknown one sweep of their account.
func TestJanitorEnqueuesSweeps(t *testing.T) {
	t.Parallel()
	b := setupJanitor(t)
	pool := dbtest.Pool(t)
	if err := jobs.Migrate(b.ctx, pool); err != nil {
		t.Fatal(err)
	}
	reg := jobs.NewRegistry()
	var err error
	b.j, err = reconcile.NewJanitor(reconcile.JanitorConfig{Store: b.db, Reconciler: reconcile.Config{Account: b.account, Reads: b.reads}}, reg)
	if err != nil {
		t.Fatal(err)
	}
	q, err := jobs.New(pool, zaptest.NewLogger(t), reg, jobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b.j.Attach(q)
	known := b.pending(t, "pm_card_visa")
	if _, err := pool.Exec(b.ctx, `UPDATE charges SET processor_ref = 'pi_known_'||id WHERE id = $1`, known); err != nil {
		t.Fatal(err)
	}
	unknown := []string{b.pending(t, "pm_card_visa"), b.pending(t, "pm_card_visa")}
	b.due(t, append(unknown, known)...)
	if _, err := b.j.Sweep(b.ctx); err != nil {
		t.Fatal(err)
	}
	count := func(kind, key, value string) int {
		var n int
		if err := pool.QueryRow(b.ctx, `SELECT count(*) FROM river_job WHERE kind = $1 AND args->>$2 = $3`, kind, key, value).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(reconcile.CheckArgs{}.Kind(), "charge_id", known); n != 1 {
		t.Fatalf("checks of the charge whose id is known: got %d, want 1", n)
	}
	for _, id := range unknown {
		if n := count(reconcile.CheckArgs{}.Kind(), "charge_id", id); n != 0 {
			t.Fatalf("checks of %s, whose id is unknown: got %d, want none (its account's sweep)", id, n)
		}
	}
	if _, err := b.j.Sweep(b.ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(reconcile.AccountSweepArgs{}.Kind(), "account", b.account); n != 1 {
		t.Fatalf("sweeps of the account after two enqueues: got %d, want 1", n)
	}
	if w := b.waited(t, unknown[0]); w <= 0 || w > time.Minute {
		t.Fatalf("waited: got %v, want the second since it came due", w)
	}
}

// waited is how long ago the charge's check came due, as DueReconciliations reads it.
func (b *janitorBundle) waited(t *testing.T, id string) time.Duration {
	t.Helper()
	due, err := b.db.DueReconciliations(b.ctx, 100000)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range due {
		if d.ChargeID == id {
			return d.Waited
		}
	}
	t.Fatalf("%s is not due", id)
	return 0
}

// TestSweepSegments: a span of many charges sent over several seconds is listed in segments
// at once; every charge is still settled from the pass, one check each, with a complete
// listing of its window.
func TestSweepSegments(t *testing.T) {
	t.Parallel()
	s := setupSweeps(t, 100)
	const n = 400
	var ids []string
	for range n {
		id := s.pending(t, "pm_card_visa")
		s.pay(t, id, "pm_card_visa")
		ids = append(ids, id)
	}
	// Sent over four seconds, a minute ago.
	if _, err := dbtest.Pool(t).Exec(s.ctx, `
		UPDATE charges c SET first_sent_at = date_trunc('second', now()) - interval '1 minute' + (t.i % 4) * interval '1 second',
			created_at = date_trunc('second', now()) - interval '1 minute' + (t.i % 4) * interval '1 second' - interval '1 millisecond'
		  FROM unnest($1::text[]) WITH ORDINALITY AS t(id, i) WHERE c.id = t.id`, ids); err != nil {
		t.Fatal(err)
	}
	s.due(t, ids...)
	res, err := s.j.SweepAccount(s.ctx, s.account)
	if err != nil {
		t.Fatal(err)
	}
	// Four segments: three hold only the margins before the later sends (a page each), the
	// last every PaymentIntent (four pages).
	if res.Settled() != n || res.Spans != 1 || res.Pages != 7 || s.reads.search.Load() != 0 {
		t.Fatalf("sweep: got %d settled, %d spans, %d pages, %d searches; want %d, 1, 7, 0",
			res.Settled(), res.Spans, res.Pages, s.reads.search.Load(), n)
	}
	for id, k := range s.checks(t, ids) {
		if k != 1 {
			t.Fatalf("%s: %d checks, want 1", id, k)
		}
	}
	if l := s.lastCheck(t, ids[0]).Evidence.List; l == nil || !l.Complete || l.Sweep == nil || !l.Sweep.Complete || l.Sweep.Charges != n {
		t.Fatalf("listing: got %+v, want complete, from the pass over %d charges", l, n)
	}
}

// TestSweepAbsence: a charge a sweep's listing covers in full and does not contain is subject
// to the absence rule unchanged: after the 24 h rule closed its key, the first such listing
// puts it in review, and a second one an hour later resolves it failed.
func TestSweepAbsence(t *testing.T) {
	t.Parallel()
	s := setupSweeps(t, 100)
	clk := &clock{t: time.Now()}
	var err error
	s.j, err = reconcile.NewJanitor(reconcile.JanitorConfig{Store: s.db, Log: zaptest.NewLogger(t),
		Reconciler: reconcile.Config{Account: s.account, Reads: s.reads, Now: clk.Now}}, jobs.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{s.pending(t, "pm_card_visa"), s.pending(t, "pm_card_visa")}
	// Sent 26 hours ago: the 24 h rule has closed their keys.
	if _, err := dbtest.Pool(t).Exec(s.ctx, `UPDATE charges SET first_sent_at = now() - interval '26 hours',
		created_at = now() - interval '26 hours',
		attempt_log = jsonb_build_array(jsonb_build_array(1, (extract(epoch FROM now() - interval '26 hours') * 1000000)::bigint,
			4000, 4000, 'outcome_unknown', 0, '', '', 0, 0, 0, 0))::text
		WHERE id = ANY($1)`, ids); err != nil {
		t.Fatal(err)
	}
	for i, want := range []reconcile.Kind{reconcile.KindReview, reconcile.KindResolve} {
		s.due(t, ids...)
		res, err := s.j.SweepAccount(s.ctx, s.account)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Checks) != 2 || res.Spans != 1 {
			t.Fatalf("sweep %d: got %d checks in %d spans, want 2 in 1", i+1, len(res.Checks), res.Spans)
		}
		for _, chk := range res.Checks {
			if chk.Decision.Kind != want {
				t.Fatalf("sweep %d: got %+v, want %s", i+1, chk.Decision, want)
			}
		}
		clk.Set(clk.Now().Add(reconcile.AbsenceGap))
	}
	for _, id := range ids {
		c, err := s.db.Charge(s.ctx, s.merchant, id)
		if err != nil {
			t.Fatal(err)
		}
		if d := s.lastCheck(t, id).Decision; c.Status != charge.StatusFailed || d.Path != reconcile.PathAbsence {
			t.Fatalf("%s: got %s by %s, want failed by absence", id, c.Status, d.Path)
		}
	}
}
