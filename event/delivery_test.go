package event_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/paygate/paygate/event"
	"github.com/paygate/paygate/event/verify"
)

func TestTry(t *testing.T) {
	t.Parallel()
	now := time.Now()
	body := []byte(`{"id":"evt_a_o"}`)
	var followed bool
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get(event.EventIDHeader) != "evt_a_o" || r.Header.Get("Content-Type") != "application/json" ||
			verify.Signature(b, r.Header.Get(event.SignatureHeader), "whsec_x", verify.DefaultTolerance, now) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/busy", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" && r.Header.Get("Referer") != "" {
			followed = true
		}
		mux.ServeHTTP(w, r)
	}))
	defer srv.Close()
	sch := event.DefaultSchedule()
	sch.Timeout = 200 * time.Millisecond
	d := event.NewDeliverer(event.DelivererConfig{Schedule: sch, AllowHTTP: true})

	if o := d.Try(context.Background(), srv.URL+"/ok", "evt_a_o", body, []string{"whsec_x"}, now); o.Err != nil || o.HTTPStatus != 202 {
		t.Fatalf("signed delivery: got %+v, want 202", o)
	}
	if o := d.Try(context.Background(), srv.URL+"/moved", "evt_a_o", body, []string{"whsec_x"}, now); o.HTTPStatus != 302 || followed {
		t.Fatalf("redirect: got %+v (followed %v), want 302 not followed", o, followed)
	}
	if o := d.Try(context.Background(), srv.URL+"/busy", "evt_a_o", body, []string{"whsec_x"}, now); o.HTTPStatus != 429 || o.RetryAfter != 2*time.Minute {
		t.Fatalf("Retry-After: got %+v, want 429 and 2m", o)
	}
	if o := d.Try(context.Background(), srv.URL+"/slow", "evt_a_o", body, []string{"whsec_x"}, now); o.Err == nil {
		t.Fatalf("no answer within the timeout: got %+v, want an error", o)
	}
	// Without PAYGATE_WEBHOOK_ALLOW_HTTP, the dialer refuses the loopback receiver.
	strict := event.NewDeliverer(event.DelivererConfig{Schedule: sch})
	if o := strict.Try(context.Background(), srv.URL+"/ok", "evt_a_o", body, []string{"whsec_x"}, now); o.Err == nil {
		t.Fatalf("loopback without allow: got %+v, want refused at dial", o)
	}
}
