package processor

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"

	"github.com/paygate/paygate/retry"
)

// TestKeyConflictNeverFails checks that an answer proving a request under our key exists at
// the processor (a concurrent request still running, or the key used with other parameters)
// never lets the retry loop answer failed, whatever Stripe-Should-Retry says.
func TestKeyConflictNeverFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		status      int
		typ         stripe.ErrorType
		code        string
		shouldRetry string
	}{
		{"409 key in use", 409, stripe.ErrorTypeInvalidRequest, "idempotency_key_in_use", ""},
		{"409 key in use, should-retry true", 409, stripe.ErrorTypeInvalidRequest, "idempotency_key_in_use", "true"},
		{"409 key in use, should-retry false", 409, stripe.ErrorTypeInvalidRequest, "idempotency_key_in_use", "false"},
		{"409 without a code", 409, stripe.ErrorTypeInvalidRequest, "", ""},
		{"400 idempotency_error", 400, stripe.ErrorTypeIdempotency, "", ""},
		{"400 idempotency_error, should-retry true", 400, stripe.ErrorTypeIdempotency, "", "true"},
		{"400 idempotency_error, should-retry false", 400, stripe.ErrorTypeIdempotency, "", "false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := map[string]string{}
			if tc.shouldRetry != "" {
				h["Stripe-Should-Retry"] = tc.shouldRetry
			}
			rep := runConstant(t, classifyWrite(response{wrote: true}, nil, stripeErr(tc.status, tc.typ, tc.code, h, `{}`)).Outcome)
			if rep.Result.Status != retry.StatusPending {
				t.Fatalf("got result %s (stop %s), want pending", rep.Result, rep.Stop)
			}
		})
	}
}

// runConstant runs the default retry loop on a fake clock, every attempt answered out.
func runConstant(t *testing.T, out retry.Outcome) retry.Report {
	t.Helper()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	run, err := retry.NewRun(now, retry.DefaultPolicy(), retry.Operation{IdempotencyKey: "pg_ch_1"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, ok := run.Begin(now); !ok {
			break
		}
		now = now.Add(10 * time.Millisecond)
		d := run.Next(now, out)
		if !d.Retry {
			break
		}
		now = now.Add(d.Wait)
	}
	return run.Report()
}

// TestCreatePaymentBlankKeyNotSent checks that a key stripe-go would trim to nothing (it
// sends "Idempotency-Key:" empty, which the processor ignores) never reaches the processor.
func TestCreatePaymentBlankKeyNotSent(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"pi_1","object":"payment_intent","status":"succeeded"}`))
	}))
	t.Cleanup(srv.Close)
	c, err := New(Config{SecretKey: "sk_test_x", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", " ", "\t \n"} {
		a := c.CreatePayment(context.Background(), PaymentParams{Key: key, ChargeID: "ch_1", Amount: 100,
			Currency: "usd", PaymentMethod: "pm_card_visa"})
		if a.Outcome.Class != retry.ClassTerminal {
			t.Errorf("key %q: got class %s, want %s", key, a.Outcome.Class, retry.ClassTerminal)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("got %d requests sent, want 0", n)
	}
}
