package main

import (
	"context"
	"net/http"
	"net/http/pprof"
	"time"

	"go.uber.org/zap"
)

// startDebugServer serves Go's profiler on addr until ctx ends. It is off unless
// PAYGATE_DEBUG_ADDR is set, and belongs on a loopback or otherwise private address.
func startDebugServer(ctx context.Context, log *zap.Logger, addr string) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
			log.Error("debug server", zap.Error(err))
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	log.Info("profiler serving", zap.String("debug_addr", addr))
}
