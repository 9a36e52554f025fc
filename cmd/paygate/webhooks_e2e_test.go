package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stripe/stripe-go/v76/webhook"
)

const hookSecret = "whsec_e2eWebhookSecret"

// lostAnswers makes the simulator lose the answers of the next n write requests: each
// request takes effect, and its answer never arrives.
func (g *gateway) lostAnswers(n int) {
	g.t.Helper()
	g.script("[" + strings.TrimSuffix(strings.Repeat(`{"drop_response":true},`, n), ",") + "]")
}

// pendingUnknown charges visa under idem with every answer lost: the charge is pending and
// knows no PaymentIntent. It returns the charge id.
func (g *gateway) pendingUnknown(key, idem string) string {
	g.t.Helper()
	g.lostAnswers(8)
	r := g.charge(key, idem, visa, "Request-Timeout-Ms", "2000")
	g.script(`[]`)
	if r.status != http.StatusAccepted || r.json(g.t)["processor_ref"] != nil {
		g.t.Fatalf("every answer lost: got %d %s, want 202 pending without processor_ref", r.status, r.body)
	}
	return r.json(g.t)["id"].(string)
}

// paymentIntentOf returns the id and the JSON the simulator renders of the PaymentIntent
// created under the charge's key.
func (g *gateway) paymentIntentOf(chargeID string) (string, json.RawMessage) {
	g.t.Helper()
	resp, err := http.Get(g.simBase + "/_sim/ledger?idempotency_key=pg_" + chargeID)
	if err != nil {
		g.t.Fatal(err)
	}
	var l struct {
		Data []struct {
			PaymentIntent string `json:"payment_intent"`
		} `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&l)
	resp.Body.Close()
	if err != nil || len(l.Data) != 1 || l.Data[0].PaymentIntent == "" {
		g.t.Fatalf("ledger of pg_%s: got %+v, %v", chargeID, l, err)
	}
	id := l.Data[0].PaymentIntent
	req, _ := http.NewRequest(http.MethodGet, g.simBase+"/v1/payment_intents/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+simSecretKey)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		g.t.Fatalf("GET the PaymentIntent %s: %d %s", id, resp.StatusCode, body)
	}
	return id, body
}

// simAccount returns the account the simulator answers for.
func (g *gateway) simAccount() string {
	g.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, g.simBase+"/v1/account", nil)
	req.Header.Set("Authorization", "Bearer "+simSecretKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	var a struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		g.t.Fatal(err)
	}
	return a.ID
}

// stripeEvent is an event in Stripe's format about a PaymentIntent rendered as pi.
func stripeEvent(id, typ, account string, pi json.RawMessage) string {
	b, _ := json.Marshal(map[string]any{"id": id, "object": "event", "type": typ, "created": time.Now().Unix(),
		"account": account, "api_version": "2023-10-16", "livemode": false, "data": map[string]any{"object": pi}})
	return string(b)
}

// deliver posts body to /webhooks/stripe with the given Stripe-Signature header (none when
// empty).
func (g *gateway) deliver(body, signature string) reply {
	g.t.Helper()
	h := map[string]string{}
	if signature != "" {
		h["Stripe-Signature"] = signature
	}
	return g.do(http.MethodPost, "/webhooks/stripe", "", h, body)
}

func sign(body, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: []byte(body), Secret: secret, Timestamp: at}).Header
}

// webhookState is what the database holds that a delivery could change.
type webhookState struct {
	events, checks, inReview int
	statuses                 string
}

func (g *gateway) webhookState(ids ...string) webhookState {
	g.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, g.env["DATABASE_URL"])
	if err != nil {
		g.t.Fatal(err)
	}
	defer conn.Close(ctx)
	var s webhookState
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM webhook_events),
		(SELECT count(*) FROM reconciliation_checks WHERE charge_id = ANY($1)),
		(SELECT count(*) FROM reconciliations WHERE charge_id = ANY($1) AND in_review),
		(SELECT string_agg(status, ',' ORDER BY id) FROM charges WHERE id = ANY($1))`, ids).
		Scan(&s.events, &s.checks, &s.inReview, &s.statuses)
	if err != nil {
		g.t.Fatal(err)
	}
	return s
}

// waitStatus polls the charge until it has status want, for at most 10 s.
func (g *gateway) waitStatus(key, id, want string) map[string]any {
	g.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := g.do(http.MethodGet, "/v1/charges/"+id, key, nil, "").json(g.t)
		if c["status"] == want {
			return c
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("charge %s: got %v, want %s within 10 s", id, c["status"], want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWebhookDeliveriesChangeNothing: deliveries that are forged (another secret, a body
// other than the one signed), unsigned, stale, or over 64 KiB are refused with 400 and
// change nothing; a valid event settles its charge through a read; its replay, and later
// events about the settled charge, change nothing; an event that conflicts with its charge
// sends it to review with the event attached; one about a charge paygate does not know
// changes nothing but its record.
func TestWebhookDeliveriesChangeNothing(t *testing.T) {
	t.Parallel()
	// The simulator sends nothing itself here: the test delivers every event. Checks are an
	// hour away, so only an event can settle a charge.
	g := startGateway(t, "STRIPE_WEBHOOK_SECRET", hookSecret, "PAYGATE_RECONCILE_SCHEDULE", "1h,2h")
	k, op := g.key("m_hooks", "checkout"), g.key("m_hooks", "operator")
	account := g.simAccount()
	id := g.pendingUnknown(k, "hook-1")
	pi, rendered := g.paymentIntentOf(id)
	good := stripeEvent("evt_good1", "payment_intent.succeeded", account, rendered)

	before := g.webhookState(id)
	if before.statuses != "pending" || before.events != 0 {
		t.Fatalf("before: got %+v, want the charge pending and no event", before)
	}
	now := time.Now()
	huge := stripeEvent("evt_huge", "payment_intent.succeeded", account, rendered)
	huge = strings.Replace(huge, `"livemode":false`, `"livemode":false,"pad":"`+strings.Repeat("x", 64<<10)+`"`, 1)
	for _, tc := range []struct {
		name, body, signature, code string
	}{
		{"another secret", good, sign(good, "whsec_forgedSecret1", now), "signature_invalid"},
		{"a body other than the one signed", strings.Replace(good, `"evt_good1"`, `"evt_forged"`, 1), sign(good, hookSecret, now), "signature_invalid"},
		{"no signature", good, "", "signature_missing"},
		{"signed six minutes ago", good, sign(good, hookSecret, now.Add(-6*time.Minute)), "signature_expired"},
		{"over 64 KiB", huge, sign(huge, hookSecret, now), "body_too_large"},
	} {
		r := g.deliver(tc.body, tc.signature)
		if r.status != http.StatusBadRequest || r.json(t)["error"].(map[string]any)["code"] != tc.code {
			t.Fatalf("%s: got %d %s, want 400 %s", tc.name, r.status, r.body, tc.code)
		}
		if got := g.webhookState(id); got != before {
			t.Fatalf("%s: the database changed: got %+v, want %+v", tc.name, got, before)
		}
	}

	// A valid event: the check it triggers reads the PaymentIntent once and settles the charge.
	r := g.deliver(good, sign(good, hookSecret, time.Now()))
	if r.status != http.StatusOK || r.json(t)["duplicate"] != false {
		t.Fatalf("valid event: got %d %s, want 200", r.status, r.body)
	}
	c := g.waitStatus(op, id, "succeeded")
	if c["processor_ref"] != pi {
		t.Fatalf("settled charge: processor_ref %v, want %s", c["processor_ref"], pi)
	}
	checks := c["reconciliation"].(map[string]any)["checks"].([]any)
	last := checks[len(checks)-1].(map[string]any)
	if last["decision"].(map[string]any)["path"] != "retrieve" || last["evidence"].(map[string]any)["event"].(map[string]any)["id"] != "evt_good1" {
		t.Fatalf("the check: got %v, want a retrieve with the event attached", last)
	}
	m := g.metrics()
	for _, want := range []string{`paygate_reconciliation_reads_total{op="retrieve",result="answered"} 1`,
		`paygate_reconciliation_reads_total{op="list",result="answered"} 0`, `paygate_reconciliation_reads_total{op="search",result="answered"} 0`,
		`paygate_webhook_events_total{result="refused"} 5`, `paygate_webhook_events_total{result="verified"} 1`,
		`paygate_webhook_dispositions_total{disposition="check"} 1`} {
		if !strings.Contains(m, want) {
			t.Fatalf("metrics lack %q", want)
		}
	}

	// Replayed, even freshly signed: 200, and nothing changes.
	settled := g.webhookState(id)
	for i := range 2 {
		r := g.deliver(good, sign(good, hookSecret, time.Now()))
		if r.status != http.StatusOK || r.json(t)["duplicate"] != true {
			t.Fatalf("replay %d: got %d %s, want 200 duplicate", i+1, r.status, r.body)
		}
	}
	if got := g.webhookState(id); got != settled {
		t.Fatalf("after replays: got %+v, want %+v", got, settled)
	}
	// A new event about the settled charge: recorded, nothing else.
	later := stripeEvent("evt_later", "payment_intent.succeeded", account, rendered)
	if r := g.deliver(later, sign(later, hookSecret, time.Now())); r.status != http.StatusOK {
		t.Fatalf("event about a settled charge: got %d %s", r.status, r.body)
	}
	if got := g.webhookState(id); got.checks != settled.checks || got.statuses != "succeeded" || got.events != settled.events+1 {
		t.Fatalf("after an event about a settled charge: got %+v, want only its record (%+v)", got, settled)
	}
	if m := g.metrics(); !strings.Contains(m, `paygate_webhook_events_total{result="duplicate"} 2`) ||
		!strings.Contains(m, `paygate_webhook_dispositions_total{disposition="settled"} 1`) ||
		!strings.Contains(m, `paygate_reconciliation_reads_total{op="retrieve",result="answered"} 1`) {
		t.Fatalf("metrics after replays:\n%s", grepLines(m, "paygate_webhook", "paygate_reconciliation_reads"))
	}

	// Conflicting events go to review with the event attached, unsettled.
	for _, tc := range []struct {
		name, reason string
		event        func(account string, pi json.RawMessage) string
	}{
		{"amount and currency differ", "event_mismatch", func(account string, pi json.RawMessage) string {
			var m map[string]any
			_ = json.Unmarshal(pi, &m)
			m["amount"], m["currency"] = 5, "eur"
			b, _ := json.Marshal(m)
			return stripeEvent("evt_mismatch", "payment_intent.succeeded", account, b)
		}},
		{"another account", "event_other_account", func(_ string, pi json.RawMessage) string {
			return stripeEvent("evt_other", "payment_intent.succeeded", "acct_somebodyElse", pi)
		}},
	} {
		id := g.pendingUnknown(k, "hook-"+tc.reason)
		_, rendered := g.paymentIntentOf(id)
		body := tc.event(account, rendered)
		if r := g.deliver(body, sign(body, hookSecret, time.Now())); r.status != http.StatusOK {
			t.Fatalf("%s: got %d %s, want 200", tc.name, r.status, r.body)
		}
		item := g.waitReview(op, id)
		if item["review"].(map[string]any)["reason"] != tc.reason || item["charge"].(map[string]any)["status"] != "pending" {
			t.Fatalf("%s: review item %v, want reason %s, still pending", tc.name, item, tc.reason)
		}
		if ev := item["evidence"].(map[string]any)["evidence"].(map[string]any)["event"]; ev == nil {
			t.Fatalf("%s: review evidence %v, want the event attached", tc.name, item["evidence"])
		}
	}

	// An event about a charge paygate does not know changes nothing but its record.
	var unknown map[string]any
	_ = json.Unmarshal(rendered, &unknown)
	unknown["metadata"] = map[string]string{"paygate_charge_id": "ch_nobodyknows"}
	ub, _ := json.Marshal(unknown)
	ue := stripeEvent("evt_unknown", "payment_intent.succeeded", account, ub)
	review := len(g.do(http.MethodGet, "/v1/review", op, nil, "").json(t)["data"].([]any))
	if r := g.deliver(ue, sign(ue, hookSecret, time.Now())); r.status != http.StatusOK {
		t.Fatalf("unknown charge: got %d %s, want 200", r.status, r.body)
	}
	if got := len(g.do(http.MethodGet, "/v1/review", op, nil, "").json(t)["data"].([]any)); got != review {
		t.Fatalf("review queue after an event for an unknown charge: got %d items, want %d", got, review)
	}
	if !strings.Contains(g.metrics(), `paygate_webhook_dispositions_total{disposition="unknown_charge"} 1`) ||
		!strings.Contains(g.logs.String(), "processor event for a charge paygate does not know") {
		t.Fatal("an event for an unknown charge: want it counted and logged")
	}
	if n := g.ledger()["pg_"+id]; n != 1 {
		t.Fatalf("effects under pg_%s: got %d, want 1", id, n)
	}
}

// waitReview waits until the charge is in the review queue and returns its item.
func (g *gateway) waitReview(key, id string) map[string]any {
	g.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, it := range g.do(http.MethodGet, "/v1/review", key, nil, "").json(g.t)["data"].([]any) {
			item := it.(map[string]any)
			if item["charge"].(map[string]any)["id"] == id {
				return item
			}
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("charge %s never reached the review queue", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// grepLines returns the lines of s that start with one of the prefixes.
func grepLines(s string, prefixes ...string) string {
	var out bytes.Buffer
	for _, l := range strings.Split(s, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out.WriteString(l + "\n")
			}
		}
	}
	return out.String()
}

// TestBuiltInSimulatorWebhooks: with PAYGATE_PROCESSOR=sim the built-in simulator sends its
// events to the gateway with a secret serve made up: a charge whose every answer was lost
// settles within seconds, with one read, although its first scheduled check is an hour
// away. Paused (POST /_sim/webhooks {"enabled": false}), the events wait and the charge
// stays pending until they are sent; duplicated, each is received twice and counted once.
func TestBuiltInSimulatorWebhooks(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "PAYGATE_SIM_WEBHOOKS", "on", "PAYGATE_RECONCILE_SCHEDULE", "1h,2h")
	k := g.key("m_simhooks", "checkout")

	id := g.pendingUnknown(k, "sh-1")
	g.waitStatus(k, id, "succeeded")

	simHooks := func(body string) map[string]any {
		t.Helper()
		resp, err := http.Post(g.simBase+"/_sim/webhooks", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("POST /_sim/webhooks %s: %d, %v", body, resp.StatusCode, err)
		}
		return st
	}
	simHooks(`{"enabled": false}`)
	paused := g.pendingUnknown(k, "sh-2")
	if st := simHooks(`{}`); st["pending"].(float64) < 2 {
		t.Fatalf("paused deliveries: got %v, want the new charge's events waiting", st)
	}
	if c := g.do(http.MethodGet, "/v1/charges/"+paused, k, nil, "").json(t); c["status"] != "pending" {
		t.Fatalf("while paused: got %v, want pending", c["status"])
	}
	simHooks(`{"enabled": true, "duplicate": true}`)
	g.waitStatus(k, paused, "succeeded")
	dup := g.pendingUnknown(k, "sh-3")
	g.waitStatus(k, dup, "succeeded")

	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(g.metrics(), `paygate_webhook_events_total{result="duplicate"} 2`) {
		if time.Now().After(deadline) {
			t.Fatalf("duplicates: got\n%s", grepLines(g.metrics(), "paygate_webhook"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	m := g.metrics()
	for _, want := range []string{`paygate_webhook_events_total{result="refused"} 0`,
		`paygate_reconciliation_reads_total{op="retrieve",result="answered"} 3`,
		`paygate_reconciliation_reads_total{op="list",result="answered"} 0`} {
		if !strings.Contains(m, want) {
			t.Fatalf("metrics lack %q:\n%s", want, grepLines(m, "paygate_webhook", "paygate_reconciliation"))
		}
	}
	for _, c := range []string{id, paused, dup} {
		if n := g.ledger()["pg_"+c]; n != 1 {
			t.Fatalf("effects under pg_%s: got %d, want 1", c, n)
		}
	}
}
