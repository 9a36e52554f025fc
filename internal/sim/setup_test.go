package sim_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/account"
	"github.com/stripe/stripe-go/v76/paymentintent"
	"github.com/stripe/stripe-go/v76/paymentmethod"
	"go.uber.org/zap/zaptest"

	"github.com/paygate/paygate/internal/sim"
)

const testKey = "sk_test_paygateSimulator123"

// clock is a settable clock for sim.Config.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// bundle is what a test drives: the simulator behind a real HTTP server and
// stripe-go clients pointed at it, with stripe-go's own retries off.
type bundle struct {
	sim     *sim.Server
	ts      *httptest.Server
	clock   *clock
	backend stripe.Backend
	pi      paymentintent.Client
	pm      paymentmethod.Client
	acct    account.Client
}

type option func(*sim.Config, *backendOptions)

type backendOptions struct {
	httpClient *http.Client
}

// withConfig changes the simulator's configuration.
func withConfig(f func(*sim.Config)) option {
	return func(c *sim.Config, _ *backendOptions) { f(c) }
}

// freshConnections makes every request dial a new connection, so a closed
// connection is reported instead of silently retried by net/http.
func freshConnections() option {
	return func(_ *sim.Config, b *backendOptions) {
		b.httpClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	}
}

func setup(t *testing.T, opts ...option) *bundle {
	t.Helper()
	c := newClock()
	cfg := sim.Config{
		AccountID: "acct_simTest0001",
		Now:       c.Now,
		Logger:    zaptest.NewLogger(t),
		SearchLag: -1,
	}
	var bo backendOptions
	for _, o := range opts {
		o(&cfg, &bo)
	}
	s := sim.New(cfg)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	t.Cleanup(s.Close) // runs first: frees held requests so ts.Close returns
	b := newBackend(ts.URL, bo.httpClient)
	return &bundle{
		sim:     s,
		ts:      ts,
		clock:   c,
		backend: b,
		pi:      paymentintent.Client{B: b, Key: testKey},
		pm:      paymentmethod.Client{B: b, Key: testKey},
		acct:    account.Client{B: b, Key: testKey},
	}
}

func newBackend(url string, hc *http.Client) stripe.Backend {
	return stripe.GetBackendWithConfig(stripe.APIBackend, &stripe.BackendConfig{
		URL:               stripe.String(url),
		MaxNetworkRetries: stripe.Int64(0),
		HTTPClient:        hc,
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
}

// charge is the create request paygate sends for a customer-initiated charge.
func charge(pm, key string) *stripe.PaymentIntentParams {
	p := &stripe.PaymentIntentParams{
		Amount:             stripe.Int64(1999),
		Currency:           stripe.String("usd"),
		PaymentMethod:      stripe.String(pm),
		PaymentMethodTypes: stripe.StringSlice([]string{"card"}),
		Confirm:            stripe.Bool(true),
		Metadata:           map[string]string{"charge_id": "ch_" + key},
	}
	if key != "" {
		p.IdempotencyKey = stripe.String(key)
	}
	return p
}

// stripeError returns err as a *stripe.Error, failing the test otherwise.
func stripeError(t *testing.T, err error) *stripe.Error {
	t.Helper()
	var se *stripe.Error
	if !errors.As(err, &se) {
		t.Fatalf("got error %v (%T), want *stripe.Error", err, err)
	}
	return se
}

// rawError decodes the "error" object of a Stripe error's raw body, for the
// fields stripe-go v76 does not know.
func rawError(t *testing.T, se *stripe.Error) map[string]any {
	t.Helper()
	var env struct {
		Error map[string]any `json:"error"`
	}
	if se.LastResponse == nil {
		t.Fatal("got no LastResponse on the error")
	}
	if err := json.Unmarshal(se.LastResponse.RawJSON, &env); err != nil {
		t.Fatalf("decoding error body: %v", err)
	}
	return env.Error
}

// do sends a raw request to the simulator and returns status, headers and body.
func (b *bundle) do(t *testing.T, method, path string, form url.Values, header map[string]string) (int, http.Header, []byte) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(context.Background(), method, b.ts.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := b.ts.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, out
}

// script sets the simulator's script through its HTTP control.
func (b *bundle) script(t *testing.T, steps string) {
	t.Helper()
	res, err := http.Post(b.ts.URL+"/_sim/script", "application/json", strings.NewReader(steps))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		t.Fatalf("POST /_sim/script: got %d %s, want 200", res.StatusCode, body)
	}
}

// ledgerEntry returns the ledger entry of key.
func (b *bundle) ledgerEntry(t *testing.T, key string) sim.LedgerEntry {
	t.Helper()
	for _, e := range b.sim.Ledger() {
		if e.IdempotencyKey == key {
			return e
		}
	}
	return sim.LedgerEntry{IdempotencyKey: key}
}

func jsonUnmarshal(b []byte, v any) error {
	return json.Unmarshal(b, v)
}

func jsonDecode(r io.Reader, v any) error {
	return json.NewDecoder(r).Decode(v)
}
