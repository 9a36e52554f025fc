package main

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestHealthAndAuth(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	if r := g.do(http.MethodGet, "/healthz", "", nil, ""); r.status != 200 {
		t.Fatalf("healthz: got %d, want 200", r.status)
	}
	if r := g.do(http.MethodGet, "/readyz", "", nil, ""); r.status != 200 {
		t.Fatalf("readyz: got %d %s, want 200", r.status, r.body)
	}
	// Metrics and the profiler are served apart from the API, which does not answer them.
	if m := g.metrics(); !strings.Contains(m, "paygate_http_request_duration_seconds") {
		t.Fatal("metrics: no request histogram")
	}
	if resp, err := http.Get(g.metricsBase + "/debug/pprof/"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("profiler on the metrics address: got %v, %v; want 200", resp, err)
	} else {
		resp.Body.Close()
	}
	for _, path := range []string{"/metrics", "/debug/pprof/"} {
		if r := g.do(http.MethodGet, path, "", nil, ""); r.status != 404 || bytes.Contains(r.body, []byte("paygate_")) {
			t.Fatalf("%s on the API's address: got %d %s, want 404", path, r.status, r.body)
		}
	}
	checkout := g.key("m_auth", "checkout")
	auditor := g.key("m_auth", "auditor")
	for _, tc := range []struct {
		name, method, key string
		wantStatus        int
		wantCode          string
	}{
		{"no key", http.MethodGet, "", 401, "unauthorized"},
		{"malformed key", http.MethodGet, "sk_live_nope", 401, "unauthorized"},
		{"unknown key", http.MethodGet, "pgk_" + strings.Repeat("a", 52), 401, "unauthorized"},
		{"auditor cannot charge", http.MethodPost, auditor, 403, "forbidden"},
		{"auditor reads", http.MethodGet, auditor, 200, ""},
		{"checkout", http.MethodGet, checkout, 200, ""},
	} {
		r := g.do(tc.method, "/v1/charges", tc.key, map[string]string{"Idempotency-Key": "auth"}, visa)
		if r.status != tc.wantStatus {
			t.Fatalf("%s: got %d %s, want %d", tc.name, r.status, r.body, tc.wantStatus)
		}
		if tc.wantCode != "" {
			if got := r.json(t)["error"].(map[string]any)["code"]; got != tc.wantCode {
				t.Fatalf("%s: got code %v, want %s", tc.name, got, tc.wantCode)
			}
		}
	}
}

func TestChargeValidation(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	k := g.key("m_valid", "checkout")
	for _, tc := range []struct {
		name, idem, body string
		headers          []string
		wantStatus       int
		wantCode         string
	}{
		{"no idempotency key", "", visa, nil, 400, "idempotency_key_missing"},
		{"non-ASCII key", "cl\u00e9", visa, nil, 400, "idempotency_key_invalid"},
		{"long key", strings.Repeat("k", 256), visa, nil, 400, "idempotency_key_invalid"},
		{"bad timeout", "v1", visa, []string{"Request-Timeout-Ms", "0"}, 400, "request_timeout_invalid"},
		{"timeout too long", "v1", visa, []string{"Request-Timeout-Ms", "60001"}, 400, "request_timeout_invalid"},
		{"empty body", "v2", "", nil, 400, "body_missing"},
		{"not JSON", "v3", "amount=1", nil, 400, "invalid_json"},
		{"array", "v4", "[]", nil, 400, "parameter_invalid"},
		{"trailing data", "v5", visa + "{}", nil, 400, "invalid_json"},
		{"unknown field", "v6", `{"amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","cvc":"123"}`, nil, 400, "parameter_unknown"},
		{"float amount", "v7", `{"amount":10.5,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`, nil, 400, "parameter_invalid"},
		{"string amount", "v8", `{"amount":"10","currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`, nil, 400, "parameter_invalid"},
		{"zero amount", "v9", `{"amount":0,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`, nil, 400, "parameter_invalid"},
		{"amount over max", "v10", `{"amount":100000000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`, nil, 400, "amount_too_large"},
		{"bad currency", "v11", `{"amount":1000,"currency":"USD","payment_method":"pm_card_visa","initiator":"customer"}`, nil, 400, "parameter_invalid"},
		{"merchant without customer", "v12", `{"amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"merchant"}`, nil, 400, "parameter_missing"},
		{"card number as payment method", "v13", `{"amount":1000,"currency":"usd","payment_method":"4242424242424242","initiator":"customer"}`, nil, 400, "card_data_not_accepted"},
		{"card number in metadata", "v14", `{"amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"note":"4000 0566 5566 5556"}}`, nil, 400, "card_data_not_accepted"},
		{"escaped card number", "v15", `{"amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"n":"\u00342424242424242\u00342"}}`, nil, 400, "card_data_not_accepted"},
		{"body too large", "v16", `{"amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"a":"` + strings.Repeat("x", 70000) + `"}}`, nil, 413, "body_too_large"},
	} {
		r := g.charge(k, tc.idem, tc.body, tc.headers...)
		if r.status != tc.wantStatus {
			t.Fatalf("%s: got %d %s, want %d", tc.name, r.status, r.body, tc.wantStatus)
		}
		e, ok := r.json(t)["error"].(map[string]any)
		if !ok || e["code"] != tc.wantCode || e["type"] == nil || e["message"] == nil {
			t.Fatalf("%s: got %s, want the error envelope with code %s", tc.name, r.body, tc.wantCode)
		}
		if bytes.Contains(r.body, []byte("4242")) || bytes.Contains(r.body, []byte("5556")) {
			t.Fatalf("%s: the answer echoes card data: %s", tc.name, r.body)
		}
	}
	// Card data never reaches the logs either.
	if strings.Contains(g.logs.String(), "4242424242424242") || strings.Contains(g.logs.String(), "5566 5556") {
		t.Fatal("card data reached the log")
	}
	if n := len(g.ledger()); n != 0 {
		t.Fatalf("invalid requests reached the processor: %d keys in the ledger", n)
	}
}

func TestChargeOutcomesAndReplay(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	k := g.key("m_out", "checkout")

	ok := g.charge(k, "o1", visa)
	if ok.status != 200 || ok.json(t)["status"] != "succeeded" {
		t.Fatalf("approval: got %d %s", ok.status, ok.body)
	}
	body := ok.json(t)
	for _, f := range []string{"id", "amount", "currency", "status", "reference", "created", "processor_ref", "attempts", "idempotency_key"} {
		if _, present := body[f]; !present {
			t.Fatalf("charge body lacks %q: %s", f, ok.body)
		}
	}
	if !strings.HasPrefix(body["processor_ref"].(string), "pi_") {
		t.Fatalf("processor_ref: got %v, want a PaymentIntent id", body["processor_ref"])
	}

	declined := g.charge(k, "o2", `{"amount":1000,"currency":"usd","payment_method":"pm_card_visa_chargeDeclinedInsufficientFunds","initiator":"customer"}`)
	if declined.status != 402 {
		t.Fatalf("decline: got %d %s, want 402", declined.status, declined.body)
	}
	d := declined.json(t)["decline"].(map[string]any)
	if d["class"] != "funds" || d["code"] != "insufficient_funds" {
		t.Fatalf("decline block: got %v", d)
	}
	// The same key and body replay the answer byte for byte, a 402 included.
	for _, prev := range []struct {
		idem, body string
		first      reply
	}{{"o1", visa, ok}, {"o2", `{"amount":1000,"currency":"usd","payment_method":"pm_card_visa_chargeDeclinedInsufficientFunds","initiator":"customer"}`, declined}} {
		again := g.charge(k, prev.idem, prev.body, "Request-Timeout-Ms", "5000")
		if again.status != prev.first.status || !bytes.Equal(again.body, prev.first.body) {
			t.Fatalf("replay of %s: got %d %s, want %d %s", prev.idem, again.status, again.body, prev.first.status, prev.first.body)
		}
	}
	// Another body under the same key is refused.
	if r := g.charge(k, "o1", `{"amount":999,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`); r.status != 422 ||
		r.json(t)["error"].(map[string]any)["code"] != "idempotency_key_reused" {
		t.Fatalf("reused key: got %d %s, want 422 idempotency_key_reused", r.status, r.body)
	}
	// One effect per logical operation.
	for key, n := range g.ledger() {
		if n != 1 {
			t.Fatalf("ledger: key %s has %d effects, want 1", key, n)
		}
	}
}

func TestDuplicateReferenceAndIsolation(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	a := g.key("m_a", "checkout")
	b := g.key("m_b", "checkout")
	withRef := `{"amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","reference":"order-1"}`
	first := g.charge(a, "r1", withRef)
	if first.status != 200 {
		t.Fatalf("first: got %d %s", first.status, first.body)
	}
	id := first.json(t)["id"].(string)
	dup := g.charge(a, "r2", withRef)
	if dup.status != 409 {
		t.Fatalf("duplicate reference: got %d %s, want 409", dup.status, dup.body)
	}
	if e := dup.json(t)["error"].(map[string]any); e["code"] != "duplicate_reference" || e["charge"] != id {
		t.Fatalf("duplicate reference: got %v, want duplicate_reference naming %s", e, id)
	}
	// Another merchant may use the same reference and the same idempotency key.
	if r := g.charge(b, "r1", withRef); r.status != 200 {
		t.Fatalf("other merchant: got %d %s, want 200", r.status, r.body)
	}
	// A merchant sees only its own charges.
	if r := g.do(http.MethodGet, "/v1/charges/"+id, b, nil, ""); r.status != 404 {
		t.Fatalf("other merchant's charge: got %d, want 404", r.status)
	}
	got := g.do(http.MethodGet, "/v1/charges/"+id, a, nil, "")
	if got.status != 200 {
		t.Fatalf("own charge: got %d", got.status)
	}
	detail := got.json(t)["attempts_detail"].([]any)
	if len(detail) != 1 {
		t.Fatalf("attempts_detail: got %d rows, want 1", len(detail))
	}
	row := detail[0].(map[string]any)
	for _, f := range []string{"n", "started_at", "duration_ms", "timeout_ms", "class", "http_status", "processor_code",
		"retry_after_ms", "backoff_ms", "budget_tokens_before", "budget_tokens_after"} {
		if _, present := row[f]; !present {
			t.Fatalf("attempts_detail lacks %q: %v", f, row)
		}
	}
	list := g.do(http.MethodGet, "/v1/charges?limit=1", b, nil, "").json(t)
	if data := list["data"].([]any); len(data) != 1 || data[0].(map[string]any)["id"] == id {
		t.Fatalf("list of merchant b: got %v", list)
	}
}

func TestListPagination(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	k := g.key("m_list", "checkout")
	var ids []string
	for i := range 5 {
		r := g.charge(k, fmt.Sprintf("p%d", i), visa)
		ids = append(ids, r.json(t)["id"].(string))
	}
	var seen []string
	path := "/v1/charges?limit=2"
	for {
		page := g.do(http.MethodGet, path, k, nil, "").json(t)
		data := page["data"].([]any)
		for _, c := range data {
			seen = append(seen, c.(map[string]any)["id"].(string))
		}
		if page["has_more"] != true {
			break
		}
		path = "/v1/charges?limit=2&starting_after=" + seen[len(seen)-1]
	}
	if len(seen) != 5 || seen[0] != ids[4] || seen[4] != ids[0] {
		t.Fatalf("pages: got %v, want newest first of %v", seen, ids)
	}
	if r := g.do(http.MethodGet, "/v1/charges?status=bogus", k, nil, ""); r.status != 400 {
		t.Fatalf("bad status filter: got %d", r.status)
	}
	if r := g.do(http.MethodGet, "/v1/charges?limit=1000", k, nil, ""); r.status != 400 {
		t.Fatalf("bad limit: got %d", r.status)
	}
}

// TestCardNumberAsIdempotencyKey: every key is accepted, a card number used as one too, but
// such a key is shown masked (its last four digits) wherever the charge is — the answer, its
// replay, the charge and the list, to checkout and operator keys — and never logged, while
// the key itself is kept whole: a retry with it replays the charge.
func TestCardNumberAsIdempotencyKey(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	k, op := g.key("m_cardkey", "checkout"), g.key("m_cardkey", "operator")
	const cardKey, masked = "4242424242424242", "************4242"
	first := g.charge(k, cardKey, visa)
	if first.status != 200 || first.json(t)["idempotency_key"] != masked {
		t.Fatalf("charge under a card-number key: got %d %s, want 200 with the key shown %q", first.status, first.body, masked)
	}
	again := g.charge(k, cardKey, visa)
	if again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" || string(again.body) != string(first.body) {
		t.Fatalf("retry under the same key: got %d %s, want the first answer replayed", again.status, again.body)
	}
	id := first.json(t)["id"].(string)
	for _, view := range []reply{
		g.do(http.MethodGet, "/v1/charges/"+id, k, nil, ""),
		g.do(http.MethodGet, "/v1/charges", k, nil, ""),
		g.do(http.MethodGet, "/v1/charges/"+id, op, nil, ""),
	} {
		if view.status != 200 || strings.Contains(string(view.body), cardKey) || !strings.Contains(string(view.body), masked) {
			t.Fatalf("a view of the charge: got %d %s, want the key masked", view.status, view.body)
		}
	}
	// A timestamp in nanoseconds that passes the Luhn check is masked too; one that does not
	// is shown as given.
	for key, shown := range map[string]string{"1767225600000000009": "***************0009", "1767225600000000001": "1767225600000000001"} {
		r := g.charge(k, key, visa)
		if r.status != 200 || r.json(t)["idempotency_key"] != shown {
			t.Fatalf("charge under key %s: got %d %s, want the key shown %q", key, r.status, r.body, shown)
		}
	}
	if logs := g.logs.String(); strings.Contains(logs, cardKey) || strings.Contains(logs, "1767225600000000009") {
		t.Fatalf("the log holds a card-number key:\n%s", logs)
	}
}
