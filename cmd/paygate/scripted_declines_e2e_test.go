package main

import (
	"fmt"
	"testing"
	"time"
)

// TestScriptedDeclines plays the simulator's scripted card errors and 424s through the
// whole gateway: a card error carrying only Stripe's error code is classified by it, the
// decline block names its hold and the verdict on reattempting the same payment method, and
// Stripe's external-dependency failure on the keyed write is an unknown outcome, never an
// invalid request. Codes: Stripe, "Error codes" and "Decline codes".
func TestScriptedDeclines(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	k := g.key("m_scripted", "checkout")
	body := func(card int) string {
		return fmt.Sprintf(`{"amount":1000,"currency":"usd","payment_method":"pm_sim_approve_visa_card%d","initiator":"customer"}`, card)
	}
	tests := []struct {
		name     string
		step     string
		class    string
		hold     string
		category float64
		reason   string
		after    time.Duration // not_before from now, when the refusal waits
	}{
		{"incorrect_cvc as the code alone", `{"status": 402, "code": "incorrect_cvc"}`,
			"fix_data", "same_payment_method", 3, "fix_data_first", 0},
		{"card_decline_rate_limit_exceeded", `{"status": 402, "code": "card_decline_rate_limit_exceeded"}`,
			"generic", "decline_rate_limit", 4, "network_cap_reached", 24 * time.Hour},
		{"duplicate_transaction", `{"status": 402, "decline_code": "duplicate_transaction"}`,
			"generic", "possible_duplicate", 4, "possible_duplicate", 0},
		{"Visa 62 with restricted_card", `{"status": 402, "decline_code": "restricted_card", "network_decline_code": "62"}`,
			"never", "", 2, "never_reattempt", 0},
		{"Visa 83 overrides fraudulent", `{"status": 402, "decline_code": "fraudulent", "network_decline_code": "83"}`,
			"generic", "", 2, "too_early", 48 * time.Hour},
	}
	for i, tt := range tests {
		g.script("[" + tt.step + "]")
		r := g.charge(k, fmt.Sprintf("scripted-%d", i), body(4800+i))
		if r.status != 402 {
			t.Fatalf("%s: got %d %s, want 402", tt.name, r.status, r.body)
		}
		d, _ := r.json(t)["decline"].(map[string]any)
		re, _ := d["reattempt"].(map[string]any)
		hold, _ := d["hold"].(string)
		if d["class"] != tt.class || hold != tt.hold || d["category"] != tt.category || re["allowed"] != false || re["reason"] != tt.reason {
			t.Errorf("%s: got decline %v, want class %s hold %q category %v, reattempt refused %s", tt.name, d, tt.class, tt.hold, tt.category, tt.reason)
			continue
		}
		nb, _ := re["not_before"].(string)
		switch at, err := time.Parse(time.RFC3339, nb); {
		case tt.after == 0 && nb != "":
			t.Errorf("%s: not_before %q, want none", tt.name, nb)
		case tt.after != 0 && (err != nil || at.Before(time.Now().Add(tt.after-time.Minute)) || at.After(time.Now().Add(tt.after+time.Minute))):
			t.Errorf("%s: not_before %q (%v), want about %v from now", tt.name, nb, err, tt.after)
		}
	}

	// Stripe's 424 on the keyed write, before or after the commit: pending, reconciled.
	for i, step := range []string{`{"status": 424}`, `{"status": 424, "after_commit": true}`} {
		g.script("[" + step + "]")
		r := g.charge(k, fmt.Sprintf("dependency-%d", i), body(4900+i))
		if r.status != 202 || r.json(t)["status"] != "pending" {
			t.Errorf("%s: got %d %s, want 202 pending", step, r.status, r.body)
		}
	}
}
