package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestInputValidationThroughTheAPI: card numbers are refused wherever they hide (duplicate
// keys, separators, other scripts' digits, unknown parameter names in bodies and queries)
// and never echoed; input PostgreSQL cannot hold, and strings that are not UTF-8, are a
// 400, never a 500 or a value read with U+FFFD in place of what it held.
func TestInputValidationThroughTheAPI(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	checkout := g.key("m_input", "checkout")
	operator := g.key("m_input", "operator")
	charge := func(metadata string) string {
		return `{"amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":` + metadata + `}`
	}
	for i, tc := range []struct {
		name, method, path, key, body string
		wantStatus                    int
		wantCode, wantParam           string
		wantMessage                   string
	}{
		{name: "card behind a duplicate metadata key", method: http.MethodPost, path: "/v1/charges", key: checkout,
			body: charge(`{"n":"4242424242424242","n":"x"}`), wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "card behind a duplicate field", method: http.MethodPost, path: "/v1/charges", key: checkout,
			body:       `{"reference":"4242424242424242","amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","reference":"r"}`,
			wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "card grouped by two spaces", method: http.MethodPost, path: "/v1/charges", key: checkout,
			body: charge(`{"n":"4242  4242  4242  4242"}`), wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "card grouped by spaced hyphens", method: http.MethodPost, path: "/v1/charges", key: checkout,
			body: charge(`{"n":"4242 - 4242 - 4242 - 4242"}`), wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "card grouped by dots", method: http.MethodPost, path: "/v1/charges", key: checkout,
			body: charge(`{"n":"4242.4242.4242.4242"}`), wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "card in fullwidth digits", method: http.MethodPost, path: "/v1/charges", key: checkout,
			body:       `{"reference":"４２４２４２４２４２４２４２４２","amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`,
			wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "card in escaped fullwidth digits", method: http.MethodPost, path: "/v1/charges", key: checkout,
			body: charge(`{"n":"\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12"}`), wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "card in Arabic-Indic digits", method: http.MethodPost, path: "/v1/charges", key: checkout,
			body: charge(`{"n":"٤٢٤٢ ٤٢٤٢ ٤٢٤٢ ٤٢٤٢"}`), wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "card in Devanagari digits", method: http.MethodPost, path: "/v1/charges", key: checkout,
			body: charge(`{"n":"४२४२-४२४२-४२४२-४२४२"}`), wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "card grouped by commas", method: http.MethodPost, path: "/v1/charges", key: checkout,
			body: charge(`{"note":"4242,4242,4242,4242"}`), wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "card grouped by plus signs", method: http.MethodPost, path: "/v1/charges", key: checkout,
			body: charge(`{"note":"4242+4242+4242+4242"}`), wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "card grouped by colons", method: http.MethodPost, path: "/v1/charges", key: checkout,
			body: charge(`{"note":"4242:4242:4242:4242"}`), wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "card in fullwidth digits in a resolution note", method: http.MethodPost, path: "/v1/charges/ch_x/resolve", key: operator,
			body: `{"outcome":"succeeded","note":"card ４２４２ ４２４２ ４２４２ ４２４２"}`, wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "card in Arabic-Indic digits in the query", method: http.MethodGet, path: "/v1/charges?starting_after=%D9%A4%D9%A2%D9%A4%D9%A2%D9%A4%D9%A2%D9%A4%D9%A2%D9%A4%D9%A2%D9%A4%D9%A2%D9%A4%D9%A2%D9%A4%D9%A2", key: checkout,
			wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "card as an unknown field of a reattempt", method: http.MethodPost, path: "/v1/charges/ch_x/reattempt", key: checkout,
			body: `{"4111111111111111":"x"}`, wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "card as an unknown field of a resolution", method: http.MethodPost, path: "/v1/charges/ch_x/resolve", key: operator,
			body: `{"outcome":"succeeded","note":"ok","4111111111111111":"x"}`, wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "card as a query parameter's name", method: http.MethodGet, path: "/v1/charges?4111111111111111=1", key: checkout,
			wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "card as a query parameter's value", method: http.MethodGet, path: "/v1/charges?starting_after=4111111111111111", key: checkout,
			wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "card in the report's query", method: http.MethodGet, path: "/v1/reports/reattempts?4111-1111-1111-1111=1", key: operator,
			wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "card in the dead letters' query", method: http.MethodGet, path: "/v1/jobs/dead?x=4111%201111%201111%201111", key: operator,
			wantStatus: 400, wantCode: "card_data_not_accepted"},
		{name: "NUL in a metadata value", method: http.MethodPost, path: "/v1/charges", key: checkout,
			body: charge(`{"a":"x\u0000y"}`), wantStatus: 400, wantCode: "parameter_invalid", wantParam: "metadata"},
		{name: "NUL in a metadata key", method: http.MethodPost, path: "/v1/charges", key: checkout,
			body: charge(`{"a\u0000":"x"}`), wantStatus: 400, wantCode: "parameter_invalid", wantParam: "metadata"},
		{name: "NUL in a resolution note", method: http.MethodPost, path: "/v1/charges/ch_x/resolve", key: operator,
			body: `{"outcome":"succeeded","note":"ok\u0000"}`, wantStatus: 400, wantCode: "parameter_invalid", wantParam: "note"},
		{name: "starting_after not UTF-8", method: http.MethodGet, path: "/v1/charges?starting_after=%ff", key: checkout,
			wantStatus: 400, wantCode: "parameter_invalid", wantParam: "starting_after"},
		{name: "starting_after with NUL", method: http.MethodGet, path: "/v1/charges?starting_after=ch_%00", key: checkout,
			wantStatus: 400, wantCode: "parameter_invalid", wantParam: "starting_after"},
		{name: "starting_after not a charge id", method: http.MethodGet, path: "/v1/charges?starting_after=pi_123", key: checkout,
			wantStatus: 400, wantCode: "parameter_invalid", wantParam: "starting_after"},
		{name: "starting_after unknown charge", method: http.MethodGet, path: "/v1/charges?starting_after=ch_nosuchcharge", key: checkout,
			wantStatus: 404, wantCode: "resource_missing", wantParam: "starting_after"},
		{name: "charge id not UTF-8", method: http.MethodGet, path: "/v1/charges/ch_%ff", key: checkout,
			wantStatus: 404, wantCode: "resource_missing"},
		{name: "charge id with NUL", method: http.MethodGet, path: "/v1/charges/ch_%00", key: checkout,
			wantStatus: 404, wantCode: "resource_missing"},
		{name: "reconcile id not UTF-8", method: http.MethodPost, path: "/v1/charges/ch_%ff/reconcile", key: operator,
			wantStatus: 404, wantCode: "resource_missing"},
		{name: "reattempt id not UTF-8", method: http.MethodPost, path: "/v1/charges/ch_%ff/reattempt", key: checkout,
			wantStatus: 404, wantCode: "resource_missing"},
		{name: "resolve id not UTF-8", method: http.MethodPost, path: "/v1/charges/ch_%ff/resolve", key: operator,
			body: `{"outcome":"succeeded","note":"ok"}`, wantStatus: 404, wantCode: "resource_missing"},
		{name: "reconcile id with NUL", method: http.MethodPost, path: "/v1/charges/ch_%00/reconcile", key: operator,
			wantStatus: 404, wantCode: "resource_missing"},
		{name: "reattempt id with NUL", method: http.MethodPost, path: "/v1/charges/ch_%00/reattempt", key: checkout,
			wantStatus: 404, wantCode: "resource_missing"},
		{name: "resolve id with NUL", method: http.MethodPost, path: "/v1/charges/ch_%00/resolve", key: operator,
			body: `{"outcome":"succeeded","note":"ok"}`, wantStatus: 404, wantCode: "resource_missing"},
		{name: "reference not UTF-8", method: http.MethodPost, path: "/v1/charges", key: checkout,
			body:       "{\"reference\":\"caf\xe9-T\",\"amount\":1000,\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\",\"initiator\":\"customer\"}",
			wantStatus: 400, wantCode: "invalid_request", wantParam: "reference"},
		{name: "another reference not UTF-8", method: http.MethodPost, path: "/v1/charges", key: checkout,
			body:       "{\"reference\":\"caf\xe8-T\",\"amount\":1000,\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\",\"initiator\":\"customer\"}",
			wantStatus: 400, wantCode: "invalid_request", wantParam: "reference"},
		{name: "metadata value with an escaped lone surrogate", method: http.MethodPost, path: "/v1/charges", key: checkout,
			body: charge(`{"note":"caf\ud800"}`), wantStatus: 400, wantCode: "invalid_request", wantParam: "metadata[note]"},
		{name: "resolution note not UTF-8", method: http.MethodPost, path: "/v1/charges/ch_x/resolve", key: operator,
			body: "{\"outcome\":\"failed\",\"note\":\"caf\xe9\"}", wantStatus: 400, wantCode: "invalid_request", wantParam: "note"},
		{name: "reattempt's payment method not UTF-8", method: http.MethodPost, path: "/v1/charges/ch_x/reattempt", key: checkout,
			body: "{\"payment_method\":\"pm_\xff\"}", wantStatus: 400, wantCode: "invalid_request", wantParam: "payment_method"},
		{name: "array body", method: http.MethodPost, path: "/v1/charges", key: checkout, body: `[]`,
			wantStatus: 400, wantCode: "parameter_invalid", wantMessage: "the request body must be a JSON object"},
		{name: "string body", method: http.MethodPost, path: "/v1/charges", key: checkout, body: `"x"`,
			wantStatus: 400, wantCode: "parameter_invalid", wantMessage: "the request body must be a JSON object"},
		{name: "array body of a resolution", method: http.MethodPost, path: "/v1/charges/ch_x/resolve", key: operator, body: `[]`,
			wantStatus: 400, wantCode: "parameter_invalid", wantMessage: "the request body must be a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var headers map[string]string
			if tc.method == http.MethodPost {
				headers = map[string]string{"Idempotency-Key": fmt.Sprintf("input-%d", i)}
			}
			r := g.do(tc.method, tc.path, tc.key, headers, tc.body)
			if r.status != tc.wantStatus {
				t.Fatalf("got %d %s, want %d", r.status, r.body, tc.wantStatus)
			}
			if echoesCard(string(r.body)) {
				t.Fatalf("the answer echoes a card number: %s", r.body)
			}
			if tc.wantCode == "" {
				return
			}
			e, _ := r.json(t)["error"].(map[string]any)
			if e["code"] != tc.wantCode {
				t.Fatalf("got %s, want code %s", r.body, tc.wantCode)
			}
			if p, _ := e["param"].(string); p != tc.wantParam {
				t.Fatalf("got param %q, want %q", p, tc.wantParam)
			}
			if tc.wantMessage != "" && e["message"] != tc.wantMessage {
				t.Fatalf("got message %v, want %q", e["message"], tc.wantMessage)
			}
		})
	}
	// Nothing refused was stored.
	r := g.do(http.MethodGet, "/v1/charges", checkout, nil, "")
	var list struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil || r.status != 200 || len(list.Data) != 0 {
		t.Fatalf("list after refusals: got %d %s, want no charges", r.status, r.body)
	}
	if logs := g.logs.String(); echoesCard(logs) {
		t.Fatalf("the log holds a card number:\n%s", logs)
	}
}

// echoesCard reports whether s holds a piece of the card numbers of
// TestInputValidationThroughTheAPI, in any of the scripts it writes them in.
func echoesCard(s string) bool {
	for _, piece := range []string{"1111", "4242", "４２４２", "٤٢٤٢", "४२४२", `\uff14\uff12`, `\u0664\u0662`, `\u096a\u0968`} {
		if strings.Contains(s, piece) {
			return true
		}
	}
	return false
}

// TestAttemptsDetailWithoutAttempts: GET /v1/charges/{id} carries attempts_detail even when
// no attempt was made.
func TestAttemptsDetailWithoutAttempts(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	k := g.key("m_noattempt", "checkout")
	// A deadline too short for any attempt: the charge fails before anything is sent.
	c := g.charge(k, "no-attempt", visa, "Request-Timeout-Ms", "1").json(t)
	id, _ := c["id"].(string)
	if id == "" || c["attempts"] != float64(0) {
		t.Fatalf("got %v, want a charge without attempts", c)
	}
	r := g.do(http.MethodGet, "/v1/charges/"+id, k, nil, "")
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &m); err != nil || r.status != 200 {
		t.Fatalf("GET charge: got %d %s", r.status, r.body)
	}
	if got := string(m["attempts_detail"]); got != "[]" {
		t.Fatalf("got attempts_detail %q, want []", got)
	}
}
