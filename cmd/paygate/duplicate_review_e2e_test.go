package main

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestPossibleDuplicateGoesToReview: a charge the issuer declines as a duplicate of a recent
// transaction (Stripe's duplicate_transaction) is no reattempt candidate and goes to the
// review queue as a possible second payment, with the earlier charge on the same card, of
// the same amount and currency, named as the likely first payment. An operator acknowledges
// it as declined, without a reconciliation first; no other outcome is taken. Code: Stripe,
// "Decline codes": duplicate_transaction.
func TestPossibleDuplicateGoesToReview(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	k := g.key("m_duplicate", "checkout")
	op := g.key("m_duplicate", "operator")
	const body = `{"amount":2500,"currency":"usd","payment_method":"pm_sim_approve_visa_card7301","initiator":"customer"}`

	first := g.charge(k, "dup-first", body)
	if first.status != 200 {
		t.Fatalf("first payment: got %d %s", first.status, first.body)
	}
	firstID := first.json(t)["id"].(string)
	other := g.charge(k, "dup-other-amount", `{"amount":999,"currency":"usd","payment_method":"pm_sim_approve_visa_card7301","initiator":"customer"}`)
	if other.status != 200 {
		t.Fatalf("another payment on the card: got %d %s", other.status, other.body)
	}

	g.script(`[{"status": 402, "decline_code": "duplicate_transaction"}]`)
	second := g.charge(k, "dup-second", body)
	if second.status != 402 {
		t.Fatalf("second payment: got %d %s, want 402", second.status, second.body)
	}
	id := second.json(t)["id"].(string)

	item := g.waitReview(op, id)
	review := item["review"].(map[string]any)
	if review["reason"] != "possible_duplicate_payment" {
		t.Fatalf("review: got %v, want reason possible_duplicate_payment", review)
	}
	var ev struct {
		FirstPayments []struct {
			Charge string `json:"charge"`
			Amount int64  `json:"amount"`
			Status string `json:"status"`
		} `json:"likely_first_payments"`
	}
	raw, _ := json.Marshal(item["evidence"])
	if err := json.Unmarshal(raw, &ev); err != nil || len(ev.FirstPayments) != 1 || ev.FirstPayments[0].Charge != firstID ||
		ev.FirstPayments[0].Status != "succeeded" || ev.FirstPayments[0].Amount != 2500 {
		t.Fatalf("evidence: got %s (%v), want the first payment %s alone", raw, err, firstID)
	}

	path := "/v1/charges/" + id
	if got := g.do(http.MethodPost, path+"/reattempt", k, map[string]string{"Idempotency-Key": "dup-reattempt"}, ""); got.status != 422 {
		t.Fatalf("reattempt of a possible duplicate: got %d %s, want 422", got.status, got.body)
	}
	if got := g.do(http.MethodPost, path+"/resolve", op, nil, `{"outcome":"succeeded","note":"x"}`); got.status != 409 ||
		errorCode(t, got) != "decline_stands" {
		t.Fatalf("resolve as succeeded: got %d %s, want 409 decline_stands", got.status, got.body)
	}
	done := g.do(http.MethodPost, path+"/resolve", op, nil, `{"outcome":"declined","note":"order paid by the first charge"}`)
	if done.status != 200 || done.json(t)["status"] != "declined" {
		t.Fatalf("acknowledge: got %d %s, want 200 declined", done.status, done.body)
	}
	for _, it := range g.do(http.MethodGet, "/v1/review", op, nil, "").json(t)["data"].([]any) {
		if it.(map[string]any)["charge"].(map[string]any)["id"] == id {
			t.Fatal("acknowledged charge still in the review queue")
		}
	}
	events := g.do(http.MethodGet, path, op, nil, "").json(t)["events"].([]any)
	var sawReview, sawManual bool
	for _, e := range events {
		m := e.(map[string]any)
		switch m["action"] {
		case "review":
			sawReview = m["reason"] == "possible_duplicate_payment"
		case "manual_resolution":
			sawManual = m["note"] == "order paid by the first charge" && m["status_after"] == "declined"
		}
	}
	if !sawReview || !sawManual {
		t.Fatalf("audit trail: got %v, want the review entry and the operator's acknowledgement", events)
	}
}

// errorCode is the code of an error reply.
func errorCode(t *testing.T, r reply) string {
	t.Helper()
	e, _ := r.json(t)["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}
