package sim_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/webhook"

	"github.com/paygate/paygate/internal/sim"
)

const testWebhookSecret = "whsec_simTestSecret"

// endpoint is a webhook endpoint that verifies every delivery as a Stripe integration does
// and records the events; fail answers the next deliveries with that status.
type endpoint struct {
	t  *testing.T
	ts *httptest.Server

	mu         sync.Mutex
	events     []stripe.Event
	deliveries int
	fail       []int
	changed    chan struct{}
}

func newEndpoint(t *testing.T) *endpoint {
	t.Helper()
	e := &endpoint{t: t, changed: make(chan struct{}, 1)}
	e.ts = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.ts.Close)
	return e
}

func (e *endpoint) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	ev, err := webhook.ConstructEventWithOptions(body, r.Header.Get("Stripe-Signature"), testWebhookSecret,
		webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})
	e.mu.Lock()
	defer func() {
		e.mu.Unlock()
		select {
		case e.changed <- struct{}{}:
		default:
		}
	}()
	e.deliveries++
	if err != nil {
		e.t.Errorf("delivery: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if len(e.fail) > 0 {
		status := e.fail[0]
		e.fail = e.fail[1:]
		w.WriteHeader(status)
		return
	}
	e.events = append(e.events, ev)
}

// await waits until cond holds over the events received, for at most 10 s.
func (e *endpoint) await(what string, cond func([]stripe.Event) bool) []stripe.Event {
	e.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		e.mu.Lock()
		evs := append([]stripe.Event(nil), e.events...)
		e.mu.Unlock()
		if cond(evs) {
			return evs
		}
		select {
		case <-e.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			e.t.Fatalf("waiting for %s: got %d events: %v", what, len(evs), types(evs))
		}
	}
}

func types(evs []stripe.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, string(ev.Type))
	}
	return out
}

// ofIntent returns the types of the events about PaymentIntent id, in arrival order.
func ofIntent(evs []stripe.Event, id string) []string {
	var out []string
	for _, ev := range evs {
		var pi stripe.PaymentIntent
		if err := json.Unmarshal(ev.Data.Raw, &pi); err == nil && pi.ID == id {
			out = append(out, string(ev.Type))
		}
	}
	return out
}

func startHooks(t *testing.T, b *bundle, e *endpoint) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := b.sim.StartWebhooks(ctx, sim.WebhookConfig{URL: e.ts.URL, Secret: testWebhookSecret,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
}

func hasAll(want ...string) func([]string) bool {
	return func(got []string) bool {
		for _, w := range want {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				return false
			}
		}
		return true
	}
}

// TestWebhooksAnnounceEveryChange: every PaymentIntent created gets payment_intent.created
// and the event of its state, in Stripe's format and signed with the secret — a payment
// whose answer a fault dropped, or stored as a 500, included.
func TestWebhooksAnnounceEveryChange(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, pm, step string
		want           []string
	}{
		{"approved", "pm_card_visa", "", []string{sim.EventCreated, sim.EventSucceeded}},
		{"declined", "pm_card_visa_chargeDeclinedInsufficientFunds", "", []string{sim.EventCreated, sim.EventPaymentFailed}},
		{"answer dropped", "pm_card_visa", `[{"drop_response": true}]`, []string{sim.EventCreated, sim.EventSucceeded}},
		{"500 after commit", "pm_card_visa", `[{"status": 500, "after_commit": true}]`, []string{sim.EventCreated, sim.EventSucceeded}},
		{"scripted decline", "pm_card_visa", `[{"status": 402, "decline_code": "do_not_honor"}]`, []string{sim.EventCreated, sim.EventPaymentFailed}},
		{"authentication", "pm_sim_requires_action", "", []string{sim.EventCreated, sim.EventRequiresAction}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, freshConnections())
			e := newEndpoint(t)
			startHooks(t, b, e)
			if tc.step != "" {
				b.script(t, tc.step)
			}
			_, _ = b.pi.New(charge(tc.pm, "k1")) // the answer may be lost: the ledger names the PaymentIntent
			id := b.ledgerEntry(t, "k1").PaymentIntent
			if id == "" {
				t.Fatal("no PaymentIntent in the ledger")
			}
			evs := e.await("the PaymentIntent's events", func(evs []stripe.Event) bool { return len(ofIntent(evs, id)) >= len(tc.want) })
			got := ofIntent(evs, id)
			if strings.Join(got, ",") != strings.Join(tc.want, ",") && !hasAll(tc.want...)(got) {
				t.Fatalf("events: got %v, want %v", got, tc.want)
			}
			for _, ev := range evs {
				if !strings.HasPrefix(ev.ID, "evt_") || ev.Account != "acct_simTest0001" || ev.Created == 0 || ev.Livemode {
					t.Errorf("event: got id %q account %q created %d livemode %v", ev.ID, ev.Account, ev.Created, ev.Livemode)
				}
				var pi stripe.PaymentIntent
				if err := json.Unmarshal(ev.Data.Raw, &pi); err != nil || pi.Metadata["charge_id"] != "ch_k1" || pi.Amount != 1999 {
					t.Errorf("data.object: got %+v, %v; want the PaymentIntent with its metadata", pi, err)
				}
			}
			awaitStats(t, b, func(st sim.WebhookStats) bool {
				return st.Emitted == len(tc.want) && st.Delivered == len(tc.want) && st.Pending == 0
			})
		})
	}
}

// TestWebhooksRetryUntilDelivered: a delivery answered with an error (or not at all) is sent
// again, with backoff, until it is answered 2xx.
func TestWebhooksRetryUntilDelivered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := newEndpoint(t)
	e.fail = []int{500, 503, 400, 404}
	startHooks(t, b, e)
	pi, err := b.pi.New(charge("pm_card_visa", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	e.await("both events despite four failed deliveries", func(evs []stripe.Event) bool {
		return hasAll(sim.EventCreated, sim.EventSucceeded)(ofIntent(evs, pi.ID))
	})
	awaitStats(t, b, func(st sim.WebhookStats) bool { return st.Attempts == 6 && st.Delivered == 2 && st.Pending == 0 })
}

// awaitStats waits until cond holds over the simulator's delivery counts, for at most 10 s.
func awaitStats(t *testing.T, b *bundle, cond func(sim.WebhookStats) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := b.sim.WebhookStats()
		if cond(st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery counts: got %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWebhooksPauseAndDuplicate: POST /_sim/webhooks {"enabled": false} keeps the events
// waiting, {"enabled": true} sends them; {"duplicate": true} sends every event twice, with
// the same id.
func TestWebhooksPauseAndDuplicate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := newEndpoint(t)
	startHooks(t, b, e)
	control := func(body string) sim.WebhookStats {
		t.Helper()
		res, err := http.Post(b.ts.URL+"/_sim/webhooks", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var st sim.WebhookStats
		if err := json.NewDecoder(res.Body).Decode(&st); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("POST /_sim/webhooks %s: got %d, %v", body, res.StatusCode, err)
		}
		return st
	}

	if st := control(`{"enabled": false}`); st.Enabled || !st.Configured {
		t.Fatalf("paused: got %+v", st)
	}
	pi, err := b.pi.New(charge("pm_card_visa", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	if st := b.sim.WebhookStats(); st.Pending != 2 || st.Attempts != 0 {
		t.Fatalf("while paused: got %+v, want 2 pending, no attempt", st)
	}
	control(`{"enabled": true}`)
	e.await("the paused events", func(evs []stripe.Event) bool { return len(ofIntent(evs, pi.ID)) == 2 })

	if st := control(`{"duplicate": true}`); !st.Duplicate || !st.Enabled {
		t.Fatalf("duplicate: got %+v", st)
	}
	dup, err := b.pi.New(charge("pm_card_visa", "k2"))
	if err != nil {
		t.Fatal(err)
	}
	evs := e.await("each event twice", func(evs []stripe.Event) bool { return len(ofIntent(evs, dup.ID)) == 4 })
	ids := map[string]int{}
	for _, ev := range evs {
		if len(ofIntent([]stripe.Event{ev}, dup.ID)) == 1 {
			ids[ev.ID]++
		}
	}
	if len(ids) != 2 {
		t.Fatalf("duplicated deliveries: got ids %v, want 2 events sent twice each", ids)
	}
	for id, n := range ids {
		if n != 2 {
			t.Errorf("event %s: got %d deliveries, want 2", id, n)
		}
	}

	res, err := http.Post(b.ts.URL+"/_sim/webhooks", "application/json", strings.NewReader(`{"enable": true}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("unknown field: got %d, want 400", res.StatusCode)
	}
}

// TestWebhooksAnnounceSettlement: a processing PaymentIntent is announced processing, then
// succeeded when it settles, whether or not anyone reads it.
func TestWebhooksAnnounceSettlement(t *testing.T) {
	t.Parallel()
	b := setup(t, withConfig(func(c *sim.Config) { c.ProcessingTime = time.Minute }))
	e := newEndpoint(t)
	startHooks(t, b, e)
	pi, err := b.pi.New(charge("pm_sim_processing", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	e.await("processing", func(evs []stripe.Event) bool {
		return hasAll(sim.EventCreated, sim.EventProcessing)(ofIntent(evs, pi.ID))
	})
	b.clock.Advance(time.Minute)
	evs := e.await("succeeded", func(evs []stripe.Event) bool { return hasAll(sim.EventSucceeded)(ofIntent(evs, pi.ID)) })
	if got := ofIntent(evs, pi.ID); len(got) != 3 {
		t.Fatalf("events: got %v, want created, processing, succeeded", got)
	}
}

// TestWebhooksWithoutConfiguration: a simulator never told where to send events records
// none, and refuses to switch deliveries it does not make.
func TestWebhooksWithoutConfiguration(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.pi.New(charge("pm_card_visa", "k1")); err != nil {
		t.Fatal(err)
	}
	if st := b.sim.WebhookStats(); st.Configured || st.Emitted != 0 {
		t.Fatalf("stats: got %+v, want nothing recorded", st)
	}
	res, err := http.Post(b.ts.URL+"/_sim/webhooks", "application/json", strings.NewReader(`{"enabled": false}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusConflict {
		t.Fatalf("POST /_sim/webhooks: got %d, want 409", res.StatusCode)
	}
	for _, cfg := range []sim.WebhookConfig{{URL: "ftp://x", Secret: "s"}, {URL: "http://127.0.0.1:1"}} {
		if err := b.sim.StartWebhooks(context.Background(), cfg); err == nil {
			t.Errorf("StartWebhooks(%+v): got nil, want an error", cfg)
		}
	}
}

// TestSignWebhookMatchesStripe: the signature is the one stripe-go computes and checks.
func TestSignWebhookMatchesStripe(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"evt_1","object":"event","type":"payment_intent.created","data":{"object":{}}}`)
	at := time.Unix(1_800_000_000, 0)
	want := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: testWebhookSecret, Timestamp: at}).Header
	if got := sim.SignWebhook(body, testWebhookSecret, at); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
