package processor

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/paygate/paygate/internal/sim"
	"github.com/paygate/paygate/retry"
)

// simClock is a settable clock for the simulator.
type simClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *simClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// readBundle is a simulator behind a real HTTP server and a Client pointed at it.
type readBundle struct {
	sim    *sim.Server
	clock  *simClock
	client *Client
}

func setupReads(t *testing.T, searchLag time.Duration) *readBundle {
	t.Helper()
	clk := &simClock{t: time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)}
	s := sim.New(sim.Config{AccountID: "acct_simReads01", Now: clk.Now, SearchLag: searchLag})
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	t.Cleanup(s.Close)
	c, err := New(Config{SecretKey: "sk_test_reads", BaseURL: ts.URL, Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return &readBundle{sim: s, clock: clk, client: c}
}

// create makes one PaymentIntent for charge id and payment method pm, failing the test
// unless the processor answered it.
func (b *readBundle) create(t *testing.T, chargeID, key, pm string, amount int64) Attempt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a := b.client.CreatePayment(ctx, PaymentParams{Key: key, ChargeID: chargeID, Amount: amount,
		Currency: "usd", PaymentMethod: pm, Customer: ""})
	if a.PaymentIntent == "" {
		t.Fatalf("create %s: got no PaymentIntent (class %s, err %v), want one", chargeID, a.Outcome.Class, a.Err)
	}
	return a
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestRetrieve(t *testing.T) {
	t.Parallel()
	b := setupReads(t, -1)
	ok := b.create(t, "ch_ok", "pg_ch_ok", "pm_card_visa", 1999)
	declined := b.create(t, "ch_dec", "pg_ch_dec", "pm_sim_decline_do_not_honor_visa_05_advice_try_again_later", 2500)

	for _, tc := range []struct {
		name         string
		id           string
		wantClass    retry.Class
		wantNotFound bool
		want         Intent
	}{
		{"succeeded", ok.PaymentIntent, retry.ClassSuccess, false,
			Intent{ID: ok.PaymentIntent, Status: "succeeded", Amount: 1999, Currency: "usd", PaymentMethod: "pm_card_visa", ChargeID: "ch_ok"}},
		{"declined with the newer fields", declined.PaymentIntent, retry.ClassSuccess, false,
			Intent{ID: declined.PaymentIntent, Status: "requires_payment_method", Amount: 2500, Currency: "usd",
				PaymentMethod: "pm_sim_decline_do_not_honor_visa_05_advice_try_again_later", ChargeID: "ch_dec",
				Decline: &Decline{Code: "card_declined", DeclineCode: "do_not_honor", AdviceCode: "try_again_later", NetworkDeclineCode: "05"}}},
		{"not found", "pi_doesnotexist", retry.ClassSuccess, true, Intent{}},
		{"no id", "", retry.ClassTerminal, false, Intent{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, res := b.client.Retrieve(testCtx(t), tc.id)
			if res.Outcome.Class != tc.wantClass || res.NotFound != tc.wantNotFound {
				t.Fatalf("result: got class %s not found %v (err %v), want %s %v", res.Outcome.Class, res.NotFound, res.Err, tc.wantClass, tc.wantNotFound)
			}
			if tc.want.ID == "" {
				if got.ID != "" {
					t.Fatalf("intent: got %+v, want none", got)
				}
				return
			}
			if res.RequestID == "" {
				t.Error("request id: got none, want the processor's")
			}
			checkIntent(t, got, tc.want)
		})
	}
}

// checkIntent compares the fields the test controls (not Created, nor the decline message).
func checkIntent(t *testing.T, got, want Intent) {
	t.Helper()
	if got.Created.IsZero() {
		t.Errorf("created: got zero, want the processor's time")
	}
	var gotDecline, wantDecline Decline
	if got.Decline != nil {
		gotDecline = *got.Decline
		gotDecline.Message = ""
	}
	if want.Decline != nil {
		wantDecline = *want.Decline
	}
	if (got.Decline == nil) != (want.Decline == nil) || gotDecline != wantDecline {
		t.Errorf("decline: got %+v, want %+v", got.Decline, want.Decline)
	}
	got.Created, got.Decline, want.Decline = time.Time{}, nil, nil
	if got != want {
		t.Errorf("intent: got %+v, want %+v", got, want)
	}
}

func TestListByCreated(t *testing.T) {
	t.Parallel()
	b := setupReads(t, -1)
	start := b.clock.Now()
	var ids []string
	for i := range 5 {
		a := b.create(t, fmt.Sprintf("ch_list%d", i), fmt.Sprintf("pg_ch_list%d", i), "pm_card_visa", 1000+int64(i))
		ids = append(ids, a.PaymentIntent)
		b.clock.Advance(10 * time.Second)
	}
	// Created at start+0s, +10s, +20s, +30s, +40s; the window [+5s, +30.5s] holds 1, 2, 3.
	from, to := start.Add(5*time.Second), start.Add(30*time.Second+500*time.Millisecond)

	t.Run("one page", func(t *testing.T) {
		t.Parallel()
		page, res := b.client.ListByCreated(testCtx(t), from, to, "", 100)
		if !res.Answered() {
			t.Fatalf("result: got %s (%v), want an answer", res.Outcome.Class, res.Err)
		}
		got := idsOf(page.Intents)
		want := []string{ids[3], ids[2], ids[1]}
		if fmt.Sprint(got) != fmt.Sprint(want) || page.HasMore {
			t.Fatalf("page: got %v has_more %v, want %v false (newest first)", got, page.HasMore, want)
		}
		if page.Intents[0].ChargeID != "ch_list3" || page.Intents[0].Amount != 1003 {
			t.Fatalf("intent: got %+v, want charge ch_list3 amount 1003", page.Intents[0])
		}
	})
	t.Run("pages", func(t *testing.T) {
		t.Parallel()
		var got []string
		after, pages := "", 0
		for {
			page, res := b.client.ListByCreated(testCtx(t), from, to, after, 2)
			if !res.Answered() {
				t.Fatalf("page %d: got %s (%v), want an answer", pages, res.Outcome.Class, res.Err)
			}
			pages++
			got = append(got, idsOf(page.Intents)...)
			if !page.HasMore {
				break
			}
			after = page.Intents[len(page.Intents)-1].ID
		}
		want := []string{ids[3], ids[2], ids[1]}
		if fmt.Sprint(got) != fmt.Sprint(want) || pages != 2 {
			t.Fatalf("pages: got %v in %d pages, want %v in 2", got, pages, want)
		}
	})
	t.Run("empty window", func(t *testing.T) {
		t.Parallel()
		page, res := b.client.ListByCreated(testCtx(t), start.Add(-time.Hour), start.Add(-time.Minute), "", 10)
		if !res.Answered() || len(page.Intents) != 0 || page.HasMore {
			t.Fatalf("got %d intents has_more %v class %s, want an empty answer", len(page.Intents), page.HasMore, res.Outcome.Class)
		}
	})
	t.Run("unknown cursor is terminal", func(t *testing.T) {
		t.Parallel()
		_, res := b.client.ListByCreated(testCtx(t), from, to, "pi_nosuch", 10)
		if res.Outcome.Class != retry.ClassTerminal {
			t.Fatalf("class: got %s, want %s", res.Outcome.Class, retry.ClassTerminal)
		}
	})
}

func idsOf(in []Intent) []string {
	out := make([]string, 0, len(in))
	for _, i := range in {
		out = append(out, i.ID)
	}
	return out
}

func TestSearchByChargeLag(t *testing.T) {
	t.Parallel()
	b := setupReads(t, 5*time.Minute)
	a := b.create(t, "ch_srch", "pg_ch_srch", "pm_card_visa", 1999)
	b.create(t, "ch_other", "pg_ch_other", "pm_card_visa", 1999)

	got, res := b.client.SearchByCharge(testCtx(t), "ch_srch")
	if !res.Answered() || len(got) != 0 {
		t.Fatalf("before the lag: got %d intents class %s, want an empty answer", len(got), res.Outcome.Class)
	}
	b.clock.Advance(5*time.Minute + time.Second)
	got, res = b.client.SearchByCharge(testCtx(t), "ch_srch")
	if !res.Answered() || len(got) != 1 || got[0].ID != a.PaymentIntent || got[0].ChargeID != "ch_srch" {
		t.Fatalf("after the lag: got %+v class %s, want %s alone", got, res.Outcome.Class, a.PaymentIntent)
	}
}

func TestSearchByChargePages(t *testing.T) {
	t.Parallel()
	b := setupReads(t, -1)
	// One charge id on more PaymentIntents than a page holds: a bug elsewhere that
	// reconciliation must see whole.
	want := map[string]bool{}
	for i := range searchPageSize + 3 {
		a := b.create(t, "ch_dup", fmt.Sprintf("pg_ch_dup_%d", i), "pm_card_visa", 1999)
		want[a.PaymentIntent] = true
		b.clock.Advance(time.Second)
	}
	got, res := b.client.SearchByCharge(testCtx(t), "ch_dup")
	if !res.Answered() {
		t.Fatalf("result: got %s (%v), want an answer", res.Outcome.Class, res.Err)
	}
	seen := map[string]bool{}
	for _, in := range got {
		seen[in.ID] = true
	}
	if len(got) != len(want) || len(seen) != len(want) {
		t.Fatalf("got %d intents (%d distinct), want %d", len(got), len(seen), len(want))
	}
}

func TestSearchByChargeQuoting(t *testing.T) {
	t.Parallel()
	b := setupReads(t, -1)
	b.create(t, `ch_'q`, "pg_ch_q", "pm_card_visa", 1999)
	got, res := b.client.SearchByCharge(testCtx(t), `ch_'q`)
	if !res.Answered() || len(got) != 1 {
		t.Fatalf("got %d intents class %s (%v), want 1", len(got), res.Outcome.Class, res.Err)
	}
}

// TestReadClassification answers reads with canned responses and checks each class.
func TestReadClassification(t *testing.T) {
	t.Parallel()
	const missing = `{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such payment_intent: 'pi_x'"}}`
	for _, tc := range []struct {
		name         string
		status       int
		header       map[string]string
		body         string
		wantClass    retry.Class
		wantNotFound bool
	}{
		{"404 resource_missing", 404, nil, missing, retry.ClassSuccess, true},
		{"500", 500, nil, `{"error":{"type":"api_error","message":"boom"}}`, retry.ClassRetry, false},
		{"500 should-retry false", 500, map[string]string{"Stripe-Should-Retry": "false"}, `{"error":{"type":"api_error","message":"boom"}}`, retry.ClassTerminal, false},
		{"502 html", 502, nil, `<html>bad gateway</html>`, retry.ClassRetry, false},
		{"503", 503, nil, `{"error":{"type":"api_error","message":"unavailable"}}`, retry.ClassRetry, false},
		{"424", 424, nil, `{"error":{"type":"api_error","message":"an external dependency failed"}}`, retry.ClassRetry, false},
		{"429", 429, map[string]string{"Retry-After": "2"}, `{"error":{"type":"invalid_request_error","code":"rate_limit","message":"slow down"}}`, retry.ClassRetryAfter, false},
		{"409 should-retry true", 409, map[string]string{"Stripe-Should-Retry": "true"}, `{"error":{"type":"invalid_request_error","code":"lock_timeout","message":"busy"}}`, retry.ClassRetry, false},
		{"400", 400, nil, `{"error":{"type":"invalid_request_error","code":"parameter_invalid_integer","message":"bad"}}`, retry.ClassTerminal, false},
		{"401", 401, nil, `{"error":{"type":"invalid_request_error","message":"Invalid API Key provided: sk_test_****"}}`, retry.ClassTerminal, false},
		{"404 other code", 404, nil, `{"error":{"type":"invalid_request_error","code":"url_invalid","message":"no route"}}`, retry.ClassTerminal, false},
		{"non-JSON 200", 200, nil, `not json`, retry.ClassRetry, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Request-Id", "req_canned")
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			}))
			t.Cleanup(ts.Close)
			c, err := New(Config{SecretKey: "sk_test_canned", BaseURL: ts.URL, Log: zaptest.NewLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			ctx := testCtx(t)
			_, r1 := c.Retrieve(ctx, "pi_x")
			_, r2 := c.ListByCreated(ctx, time.Unix(0, 0), time.Unix(100, 0), "", 10)
			_, r3 := c.SearchByCharge(ctx, "ch_x")
			for op, res := range map[string]ReadResult{"retrieve": r1, "list": r2, "search": r3} {
				wantClass, wantNotFound := tc.wantClass, tc.wantNotFound
				if op != "retrieve" && wantNotFound {
					// A collection is never "not found": its cursor vanished.
					wantClass, wantNotFound = retry.ClassTerminal, false
				}
				if res.Outcome.Class != wantClass || res.NotFound != wantNotFound {
					t.Errorf("%s: got class %s not found %v, want %s %v", op, res.Outcome.Class, res.NotFound, wantClass, wantNotFound)
				}
				if res.Outcome.MaybeExecuted {
					t.Errorf("%s: got may have executed, want never for a read", op)
				}
				if res.RequestID != "req_canned" {
					t.Errorf("%s: request id: got %q, want req_canned", op, res.RequestID)
				}
				if res.Err != nil && secretRE.MatchString(res.Err.Error()) {
					t.Errorf("%s: error carries a secret: %v", op, res.Err)
				}
			}
			if tc.status == 429 && r1.Outcome.RetryAfter != "2" {
				t.Errorf("retry-after: got %q, want 2", r1.Outcome.RetryAfter)
			}
		})
	}
}

func TestReadNetworkFailures(t *testing.T) {
	t.Parallel()
	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		c, err := New(Config{SecretKey: "sk_test_net", BaseURL: "http://" + addr, Log: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		_, res := c.Retrieve(testCtx(t), "pi_x")
		if res.Outcome.Class != retry.ClassRetry || res.Answered() {
			t.Fatalf("class: got %s, want %s", res.Outcome.Class, retry.ClassRetry)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		t.Cleanup(ts.Close)
		t.Cleanup(func() { close(release) })
		c, err := New(Config{SecretKey: "sk_test_net", BaseURL: ts.URL, Log: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, res := c.ListByCreated(ctx, time.Unix(0, 0), time.Unix(10, 0), "", 10)
		if res.Outcome.Class != retry.ClassRetry || res.Outcome.ProcessorCode != "timeout" {
			t.Fatalf("got class %s code %s, want %s timeout", res.Outcome.Class, res.Outcome.ProcessorCode, retry.ClassRetry)
		}
	})
	t.Run("random 503 on reads", func(t *testing.T) {
		t.Parallel()
		b := setupReads(t, -1)
		if err := b.sim.SetFaults(sim.Faults{ErrorRate: 1, IncludeReads: true, Status: 503}); err != nil {
			t.Fatal(err)
		}
		_, res := b.client.SearchByCharge(testCtx(t), "ch_x")
		if res.Outcome.Class != retry.ClassRetry || res.Outcome.HTTPStatus != 503 {
			t.Fatalf("got class %s status %d, want %s 503", res.Outcome.Class, res.Outcome.HTTPStatus, retry.ClassRetry)
		}
	})
}

func TestCeilUnix(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   time.Time
		want int64
	}{
		{time.Unix(100, 0), 100},
		{time.Unix(100, 1), 101},
		{time.Unix(-1, 500), 0},
	} {
		if got := ceilUnix(tc.in); got != tc.want {
			t.Errorf("ceilUnix(%v): got %d, want %d", tc.in, got, tc.want)
		}
	}
}
