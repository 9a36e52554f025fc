package main

import (
	"fmt"
	"testing"
)

// TestCardsAskingForAuthentication: on-session charges of a card that asks for 3-D Secure are
// pending (the PaymentIntent waits in requires_action), and however many the shopper tries,
// none takes a slot of the network caps, nor trips the circuit breaker: a plain card still
// charges after them.
func TestCardsAskingForAuthentication(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	k := g.key("m_3ds", "checkout")
	for i := range 17 { // beyond Visa's 15 reattempts in 30 days, and the breaker's 10 in a row
		r := g.charge(k, fmt.Sprintf("3ds-%d", i), `{"amount":1000,"currency":"usd","payment_method":"pm_sim_requires_action_card4001","initiator":"customer"}`)
		if r.status != 202 || r.json(t)["status"] != "pending" {
			t.Fatalf("charge %d of a card asking for authentication: got %d %s, want 202 pending", i+1, r.status, r.body)
		}
	}
	if r := g.charge(k, "plain", `{"amount":1000,"currency":"usd","payment_method":"pm_sim_approve_card4002","initiator":"customer"}`); r.status != 200 {
		t.Fatalf("a plain card after them: got %d %s, want 200", r.status, r.body)
	}
}
