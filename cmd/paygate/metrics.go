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
