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
				processor_account, processor_ref, first_sent_at, created_at, updated_at, attempt_log)
			SELECT id, 'm_bench', 1000, 'usd', 'pm_card_visa', 'customer', 'pending', $3, ref,
				now() - interval '1 minute', now() - interval '1 minute', now(),
				jsonb_build_array(jsonb_build_array(1, (extract(epoch FROM now() - interval '1 minute') * 1000000)::bigint,
					4000, 4000, 'outcome_unknown', 0, '', '', 0, 0, 0, 0))::text
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

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
