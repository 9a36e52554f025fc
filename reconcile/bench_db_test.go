package reconcile_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/internal/sim"
	"github.com/paygate/paygate/jobs"
	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/store"
)

// BenchmarkReconcileRetrieve resolves 10 000 pending charges whose PaymentIntent id is
// known (the retrieve path) against the simulator, and prints the rate achieved beside the
// configured processor read rate (target: at least 90 % of it). PAYGATE_BENCH_PENDING and
// PAYGATE_BENCH_READ_RATE change the figures.
func BenchmarkReconcileRetrieve(b *testing.B) {
	n := envInt("PAYGATE_BENCH_PENDING", 10000)
	readRate := envInt("PAYGATE_BENCH_READ_RATE", 500)
	ctx := context.Background()
	pool := dbtest.Pool(b)
	db := store.New(pool)

	s := sim.New(sim.Config{SearchLag: -1})
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Close()
	proc, err := processor.New(processor.Config{SecretKey: "sk_test_bench", BaseURL: ts.URL, Log: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	account, err := proc.Account(ctx)
	if err != nil {
		b.Fatal(err)
	}

	// n PaymentIntents at the processor, and n pending charges that point at them.
	ids := make([]string, n)
	refs := make([]string, n)
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				ids[i] = charge.NewID()
				a := proc.CreatePayment(ctx, processor.PaymentParams{Key: charge.ProcessorKey(ids[i]), ChargeID: ids[i],
					Amount: 1000, Currency: "usd", PaymentMethod: "pm_card_visa"})
				refs[i] = a.PaymentIntent
			}
		}()
	}
	wg.Wait()
	if _, err := pool.Exec(ctx, `INSERT INTO merchants (id) VALUES ('m_bench') ON CONFLICT DO NOTHING`); err != nil {
		b.Fatal(err)
	}
	_, err = pool.Exec(ctx, `
		WITH c AS (
			INSERT INTO charges (id, merchant_id, amount, currency, payment_method, initiator, status,
				processor_account, processor_ref, first_sent_at, created_at, updated_at, attempt_log, live)
			SELECT id, 'm_bench', 1000, 'usd', 'pm_card_visa', 'customer', 'pending', $3, ref,
				now() - interval '1 minute', now() - interval '1 minute', now(),
				jsonb_build_array(jsonb_build_array(1, (extract(epoch FROM now() - interval '1 minute') * 1000000)::bigint,
					4000, 4000, 'outcome_unknown', 0, '', '', 0, 0, 0, 0))::text, true
			  FROM unnest($1::text[], $2::text[]) AS t(id, ref)
			RETURNING id
		)
		INSERT INTO reconciliations (charge_id, next_check_at) SELECT id, now() FROM c`, ids, refs, account)
	if err != nil {
		b.Fatal(err)
	}

	reg := jobs.NewRegistry()
	j, err := reconcile.NewJanitor(reconcile.JanitorConfig{Store: db, Reconciler: reconcile.Config{Account: account, Reads: proc,
		ReadLimiter: rate.NewLimiter(rate.Limit(readRate), 1)}}, reg)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	var failed atomic.Int64
	next.Store(0)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				chk, err := j.Check(ctx, ids[i])
				if err != nil || chk.Decision.Kind != reconcile.KindResolve || chk.Decision.Path != reconcile.PathRetrieve {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	got := float64(n) / elapsed.Seconds()
	fmt.Printf("reconciled %d pending charges through the retrieve path in %.1f s: %.1f/s against a configured read rate of %d/s (%.1f%%, target >= 90%%); not resolved: %d\n",
		n, elapsed.Seconds(), got, readRate, 100*got/float64(readRate), failed.Load())
	b.ReportMetric(got, "charges/s")
	if failed.Load() != 0 {
		b.Fatalf("%d charges were not resolved through the retrieve path", failed.Load())
	}
}

// BenchmarkReconcileSweep settles 1 000 pending charges whose answers were lost (their
// PaymentIntent ids unknown), sent among 2 000 answered ones at 100 charges a second, with no
// processor events (the simulator sends none): the janitor's sweeps of the account settle
// them. It prints the processor reads per charge (target at most 0.1), the pace of the list
// pages against the configured read rate (target at least 90 % of it; paygate's default,
// 50/s) and how fast the charges were settled. PAYGATE_BENCH_LOST, PAYGATE_BENCH_ANSWERED and
// PAYGATE_BENCH_SWEEP_READ_RATE change the figures.
func BenchmarkReconcileSweep(b *testing.B) {
	lost := envInt("PAYGATE_BENCH_LOST", 1000)
	answered := envInt("PAYGATE_BENCH_ANSWERED", 2000)
	readRate := envInt("PAYGATE_BENCH_SWEEP_READ_RATE", 50) // PAYGATE_RECONCILE_READ_RATE's default
	const perSecond = 100
	ctx := context.Background()
	pool := dbtest.Pool(b)
	db := store.New(pool)

	// The simulator's clock: the charges were sent from a minute and a half ago, 100 a second.
	var simNow atomic.Int64
	s := sim.New(sim.Config{SearchLag: -1, Now: func() time.Time { return time.Unix(0, simNow.Load()) }})
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Close()
	proc, err := processor.New(processor.Config{SecretKey: "sk_test_bench", BaseURL: ts.URL, Log: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	account, err := proc.Account(ctx)
	if err != nil {
		b.Fatal(err)
	}

	// Charges spread evenly among the others lose their answers: their PaymentIntents exist,
	// their ids are unknown.
	total := lost + answered
	base := time.Now().Add(-90 * time.Second).Truncate(time.Second)
	var (
		pending []string
		sends   []time.Time
	)
	for first := 0; first < total; first += perSecond {
		sent := base.Add(time.Duration(first/perSecond) * time.Second)
		simNow.Store(sent.UnixNano())
		ids := make([]string, min(perSecond, total-first))
		var wg sync.WaitGroup
		for k := range ids {
			ids[k] = charge.NewID()
			wg.Go(func() {
				proc.CreatePayment(ctx, processor.PaymentParams{Key: charge.ProcessorKey(ids[k]), ChargeID: ids[k],
					Amount: 1000, Currency: "usd", PaymentMethod: "pm_card_visa"})
			})
		}
		wg.Wait()
		for k, id := range ids {
			if i := first + k; i*lost/total != (i+1)*lost/total {
				pending, sends = append(pending, id), append(sends, sent)
			}
		}
	}
	simNow.Store(time.Now().UnixNano())
	if _, err := pool.Exec(ctx, `INSERT INTO merchants (id) VALUES ('m_bench') ON CONFLICT DO NOTHING`); err != nil {
		b.Fatal(err)
	}
	_, err = pool.Exec(ctx, `
		WITH c AS (
			INSERT INTO charges (id, merchant_id, amount, currency, payment_method, initiator, status,
				processor_account, first_sent_at, created_at, updated_at, attempt_log, live)
			SELECT id, 'm_bench', 1000, 'usd', 'pm_card_visa', 'customer', 'pending', $2,
				sent, sent - interval '1 millisecond', now(),
				jsonb_build_array(jsonb_build_array(1, (extract(epoch FROM sent) * 1000000)::bigint,
					4000, 4000, 'outcome_unknown', 0, '', '', 0, 0, 0, 0))::text, true
			  FROM unnest($1::text[], $3::timestamptz[]) AS t(id, sent)
			RETURNING id
		)
		INSERT INTO reconciliations (charge_id, next_check_at) SELECT id, now() FROM c`, pending, account, sends)
	if err != nil {
		b.Fatal(err)
	}

	reads := &pacedReads{Reads: proc}
	j, err := reconcile.NewJanitor(reconcile.JanitorConfig{Store: db, Reconciler: reconcile.Config{Account: account, Reads: reads,
		ReadLimiter: rate.NewLimiter(rate.Limit(readRate), 1)}}, jobs.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	settled, sweeps, pages := 0, 0, 0
	for settled < lost {
		res, err := j.SweepAccount(ctx, account)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Checks) == 0 {
			break
		}
		sweeps++
		settled += res.Settled()
		pages += res.Pages
	}
	elapsed := time.Since(start)
	b.StopTimer()
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM charges WHERE id = ANY($1) AND status <> 'succeeded'`, pending).Scan(&left); err != nil {
		b.Fatal(err)
	}
	n, listed, span := reads.figures()
	pace := 0.0
	if listed > 1 && span > 0 {
		pace = float64(listed-1) / span.Seconds() // the first page waits for no token
	}
	fmt.Printf("swept %d pending charges without a PaymentIntent id (among %d answered) in %d sweeps, %.2f s: %d processor reads, %.3f per charge (target <= 0.1); %d list pages at %.1f/s against a configured read rate of %d/s (%.1f%%, target >= 90%%); %.0f charges settled/s; not settled: %d\n",
		lost, answered, sweeps, elapsed.Seconds(), n, float64(n)/float64(lost), pages, pace, readRate, 100*pace/float64(readRate),
		float64(settled)/elapsed.Seconds(), left)
	b.ReportMetric(float64(n)/float64(lost), "reads/charge")
	if left != 0 {
		b.Fatalf("%d charges were not settled by the sweeps", left)
	}
}

// pacedReads counts the processor reads and times the list pages.
type pacedReads struct {
	reconcile.Reads
	mu          sync.Mutex
	n, listed   int
	first, last time.Time
}

func (p *pacedReads) count(list bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if !list {
		return
	}
	now := time.Now()
	if p.listed == 0 {
		p.first = now
	}
	p.listed++
	p.last = now
}

// figures returns the reads, the list pages and the time from the first page to the last.
func (p *pacedReads) figures() (reads, listed int, span time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n, p.listed, p.last.Sub(p.first)
}

func (p *pacedReads) Retrieve(ctx context.Context, id string) (processor.Intent, processor.ReadResult) {
	p.count(false)
	return p.Reads.Retrieve(ctx, id)
}

func (p *pacedReads) ListByCreated(ctx context.Context, from, to time.Time, after string, limit int) (processor.IntentPage, processor.ReadResult) {
	p.count(true)
	return p.Reads.ListByCreated(ctx, from, to, after, limit)
}

func (p *pacedReads) SearchByCharge(ctx context.Context, id string) ([]processor.Intent, processor.ReadResult) {
	p.count(false)
	return p.Reads.SearchByCharge(ctx, id)
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
