package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/reconcile"
)

// startMetricsServer serves the Prometheus metrics (/metrics) and Go's profiler
// (/debug/pprof/) on ln, bound to PAYGATE_METRICS_ADDR, until ctx ends. Neither asks for a
// key, and the metrics name merchants: the address is apart from the API's and belongs on a
// loopback or otherwise private network.
func startMetricsServer(ctx context.Context, log *zap.Logger, ln net.Listener, gatherer prometheus.Gatherer) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", zap.Error(err))
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	log.Info("metrics serving", zap.String("metrics_addr", ln.Addr().String()))
}

// countedReads counts reconciliation's processor reads by operation and result: a read the
// processor answered (found, or definitely not found), or one that failed (refused, timed
// out, an error status). Checks record failed reads as evidence, not errors, so this is
// where an operator sees reconciliation going blind.
type countedReads struct {
	next  reconcile.Reads
	reads *prometheus.CounterVec
}

var _ reconcile.Reads = (*countedReads)(nil)

// newCountedReads wraps next and registers paygate_reconciliation_reads_total on reg.
func newCountedReads(next reconcile.Reads, reg prometheus.Registerer) (*countedReads, error) {
	c := &countedReads{next: next, reads: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "paygate", Name: "reconciliation_reads_total",
		Help: "Processor reads made by reconciliation, by operation (retrieve, list, search) and result (answered, failed).",
	}, []string{"op", "result"})}
	// Every series exists from the start, at 0, so that a rate over them is defined.
	for _, op := range []string{"retrieve", "list", "search"} {
		for _, res := range []string{"answered", "failed"} {
			c.reads.WithLabelValues(op, res)
		}
	}
	return c, reg.Register(c.reads)
}

func (c *countedReads) count(op string, r processor.ReadResult) {
	res := "failed"
	if r.Answered() {
		res = "answered"
	}
	c.reads.WithLabelValues(op, res).Inc()
}

// Retrieve reads one PaymentIntent by id.
func (c *countedReads) Retrieve(ctx context.Context, id string) (processor.Intent, processor.ReadResult) {
	in, r := c.next.Retrieve(ctx, id)
	c.count("retrieve", r)
	return in, r
}

// ListByCreated reads one page of the PaymentIntents created in [from, to].
func (c *countedReads) ListByCreated(ctx context.Context, from, to time.Time, startingAfter string, limit int) (processor.IntentPage, processor.ReadResult) {
	p, r := c.next.ListByCreated(ctx, from, to, startingAfter, limit)
	c.count("list", r)
	return p, r
}

// SearchByCharge finds the PaymentIntents carrying a charge id in their metadata.
func (c *countedReads) SearchByCharge(ctx context.Context, chargeID string) ([]processor.Intent, processor.ReadResult) {
	in, r := c.next.SearchByCharge(ctx, chargeID)
	c.count("search", r)
	return in, r
}
