package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"go.uber.org/zap"
)

// startDebugServer serves Go's profiler on ln, bound to PAYGATE_DEBUG_ADDR, until ctx ends.
// It is off unless PAYGATE_DEBUG_ADDR is set, and belongs on a loopback or otherwise private
// address.
func startDebugServer(ctx context.Context, log *zap.Logger, ln net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("debug server", zap.Error(err))
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	log.Info("profiler serving", zap.String("debug_addr", ln.Addr().String()))
}
