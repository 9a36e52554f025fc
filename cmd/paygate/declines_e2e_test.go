package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestDeclinesAndReattempts(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	k := g.key("m_decl", "checkout")
	body := func(pm string) string {
		return `{"amount":1000,"currency":"usd","payment_method":"` + pm + `","initiator":"merchant","customer":"cus_1"}`
	}
	errorOf := func(r reply) map[string]any {
		t.Helper()
		e, ok := r.json(t)["error"].(map[string]any)
		if !ok {
			t.Fatalf("got %d %s, want an error", r.status, r.body)
		}
		return e
	}

	// A never-class decline (Visa 41, lost card) blocks the card at this processor account for
	// good: a new charge on it is refused without any attempt at the processor.
	lost := g.charge(k, "d1", body("pm_sim_decline_lost_card_visa_41"))
	if lost.status != 402 {
		t.Fatalf("lost card: got %d %s", lost.status, lost.body)
	}
	d := lost.json(t)["decline"].(map[string]any)
	re := d["reattempt"].(map[string]any)
	if d["class"] != "never" || d["category"].(float64) != 1 || re["allowed"] != false || re["reason"] != "never_reattempt" {
		t.Fatalf("lost card decline block: got %v", d)
	}
	before := len(g.ledger())
	blocked := g.charge(k, "d2", body("pm_card_visa")) // the same card number, another payment method id
	if blocked.status != 422 || errorOf(blocked)["code"] != "reattempt_not_allowed" || errorOf(blocked)["reason"] != "never_reattempt" {
		t.Fatalf("charge on a blocked card: got %d %s, want 422 reattempt_not_allowed never_reattempt", blocked.status, blocked.body)
	}
	if after := len(g.ledger()); after != before {
		t.Fatalf("a blocked card reached the processor: %d keys, want %d", after, before)
	}

	// A funds decline may be reattempted, on the schedule: not before +1 day.
	funds := g.charge(k, "d3", body("pm_sim_decline_insufficient_funds_visa_51_card5"))
	if funds.status != 402 {
		t.Fatalf("funds: got %d %s", funds.status, funds.body)
	}
	fundsID := funds.json(t)["id"].(string)
	early := g.do(http.MethodPost, "/v1/charges/"+fundsID+"/reattempt", k, map[string]string{"Idempotency-Key": "r1"}, "{}")
	if early.status != 422 || errorOf(early)["reason"] != "too_early" {
		t.Fatalf("reattempt before the first slot: got %d %s, want 422 too_early", early.status, early.body)
	}
	nb, err := time.Parse(time.RFC3339, errorOf(early)["not_before"].(string))
	if err != nil || nb.Before(time.Now().Add(23*time.Hour)) {
		t.Fatalf("not_before: got %v (%v), want about a day from now", errorOf(early)["not_before"], err)
	}
	// The decline block announced the very slot the refusal names.
	announced := funds.json(t)["decline"].(map[string]any)["reattempt"].(map[string]any)["not_before"]
	if announced != errorOf(early)["not_before"] {
		t.Fatalf("not_before: the decline block says %v, the refusal %v; want the same instant", announced, errorOf(early)["not_before"])
	}

	// A fix-data decline clears only with new card data: another expiry of the same card.
	expired := g.charge(k, "d4", body("pm_sim_decline_expired_card_visa_54_card7"))
	if expired.status != 402 || expired.json(t)["decline"].(map[string]any)["class"] != "fix_data" {
		t.Fatalf("expired card: got %d %s", expired.status, expired.body)
	}
	expiredID := expired.json(t)["id"].(string)
	same := g.do(http.MethodPost, "/v1/charges/"+expiredID+"/reattempt", k, map[string]string{"Idempotency-Key": "r2"}, "{}")
	if same.status != 422 || errorOf(same)["reason"] != "fix_data_first" {
		t.Fatalf("reattempt with the same card data: got %d %s, want 422 fix_data_first", same.status, same.body)
	}
	fixed := g.do(http.MethodPost, "/v1/charges/"+expiredID+"/reattempt", k, map[string]string{"Idempotency-Key": "r3"},
		`{"payment_method":"pm_sim_approve_visa_card7_exp0130"}`)
	if fixed.status != 200 {
		t.Fatalf("reattempt with a new expiry: got %d %s, want 200", fixed.status, fixed.body)
	}
	fc := fixed.json(t)
	if fc["reattempt_of"] != expiredID || fc["id"] == expiredID {
		t.Fatalf("reattempt: got %v, want a new charge with reattempt_of %s", fc, expiredID)
	}
	// A new charge under a new processor key: two keys, one effect each.
	l := g.ledger()
	if l["pg_"+expiredID] != 1 || l["pg_"+fc["id"].(string)] != 1 {
		t.Fatalf("ledger: got %v", l)
	}
	// Only a declined charge can be reattempted; a replay of the same key answers the same.
	if r := g.do(http.MethodPost, "/v1/charges/"+fc["id"].(string)+"/reattempt", k, map[string]string{"Idempotency-Key": "r4"}, "{}"); r.status != 409 {
		t.Fatalf("reattempt of a succeeded charge: got %d %s, want 409", r.status, r.body)
	}
	if r := g.do(http.MethodPost, "/v1/charges/ch_nope/reattempt", k, map[string]string{"Idempotency-Key": "r5"}, "{}"); r.status != 404 {
		t.Fatalf("reattempt of an unknown charge: got %d, want 404", r.status)
	}
}

// TestTimeoutsBlockNoCard: unknown outcomes are no declines. A card whose charges keep ending
// pending between approvals (the processor stored a 500, a timeout) is never blocked by them:
// a processor hiccup must not turn into a 30-day block of the cards it touched.
func TestTimeoutsBlockNoCard(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	k := g.key("m_timeouts", "checkout")
	body := `{"amount":1000,"currency":"usd","payment_method":"pm_sim_approve_visa_card4711","initiator":"customer"}`
	for i := range 17 {
		g.script(`[{"status":500,"after_commit":true}]`)
		if r := g.charge(k, fmt.Sprintf("unknown-%d", i), body); r.status != 202 {
			t.Fatalf("round %d, stored 500: got %d %s, want 202 pending", i, r.status, r.body)
		}
		// Two approvals a round keep the failures under the breaker's threshold.
		for j := range 2 {
			if r := g.charge(k, fmt.Sprintf("approved-%d-%d", i, j), body); r.status != 200 {
				t.Fatalf("round %d, plain charge %d: got %d %s, want 200", i, j, r.status, r.body)
			}
		}
	}
}

// TestMastercardLastSlotInFlight: an attempt still in flight may be the decline that fills
// Mastercard's 24-hour cap, so a charge sent meanwhile on the same card is refused: two
// charges racing for the last slot cannot both reach the network.
func TestMastercardLastSlotInFlight(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	k := g.key("m_mc_race", "checkout")
	body := `{"amount":1000,"currency":"usd","payment_method":"pm_sim_decline_do_not_honor_mc_05_card4712","initiator":"customer"}`
	for i := range 9 {
		if r := g.charge(k, fmt.Sprintf("decline-%d", i), body); r.status != 402 {
			t.Fatalf("decline %d: got %d %s, want 402", i, r.status, r.body)
		}
	}
	g.script(`[{"delay_ms": 1500}]`)
	first := make(chan reply, 1)
	go func() { first <- g.charge(k, "tenth", body) }()
	// The tenth is admitted, and in flight at the processor.
	eventually(t, 10*time.Second, func() error {
		list := g.do(http.MethodGet, "/v1/charges?status=processing", k, nil, "")
		if data, _ := list.json(t)["data"].([]any); len(data) != 1 {
			return fmt.Errorf("charges processing: got %s, want the tenth", list.body)
		}
		return nil
	})
	second := g.charge(k, "racing", body)
	if second.status != 422 || !strings.Contains(string(second.body), "network_cap_reached") {
		t.Fatalf("charge sent while the tenth was in flight: got %d %s, want 422 network_cap_reached", second.status, second.body)
	}
	if r := <-first; r.status != 402 {
		t.Fatalf("tenth decline: got %d %s, want 402", r.status, r.body)
	}
}

// TestManualDeclineNotBefore: a charge an operator resolved declined announces, in its decline
// block, the very slot an early reattempt is then refused with: both count from the attempt's
// time as the card's history records it, not from the resolution.
func TestManualDeclineNotBefore(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "PAYGATE_IN_FLIGHT_MARGIN", "1ms")
	k, op := g.key("m_manual_nb", "checkout"), g.key("m_manual_nb", "operator")
	g.script(`[{"blackhole": true}]`)
	r := g.charge(k, "manual-nb", `{"amount":1000,"currency":"usd","payment_method":"pm_sim_approve_visa_card4713","initiator":"customer"}`,
		"Request-Timeout-Ms", "700")
	if r.status != 202 {
		t.Fatalf("blackholed charge: got %d %s, want 202", r.status, r.body)
	}
	path := "/v1/charges/" + r.json(t)["id"].(string)
	// The resolution comes after the attempt stopped executing, so well after the attempt:
	// until then a check proves nothing and the resolution is refused.
	eventually(t, 20*time.Second, func() error {
		if c := g.do(http.MethodPost, path+"/reconcile", op, nil, ""); c.status != 200 {
			t.Fatalf("reconcile: got %d %s", c.status, c.body)
		}
		d := g.do(http.MethodPost, path+"/resolve", op, nil, `{"outcome":"declined","note":"issuer said no"}`)
		if e, _ := d.json(t)["error"].(map[string]any); d.status == 409 && (e["code"] == "attempt_in_flight" || e["code"] == "reconcile_first") {
			return fmt.Errorf("resolve: got %d %s", d.status, d.body)
		}
		if d.status != 200 {
			t.Fatalf("resolve: got %d %s", d.status, d.body)
		}
		return nil
	})
	got := g.do(http.MethodGet, path, k, nil, "")
	announced := got.json(t)["decline"].(map[string]any)["reattempt"].(map[string]any)["not_before"]
	early := g.do(http.MethodPost, path+"/reattempt", k, map[string]string{"Idempotency-Key": "manual-nb-r"}, "{}")
	e, _ := early.json(t)["error"].(map[string]any)
	if early.status != 422 || e["reason"] != "too_early" {
		t.Fatalf("early reattempt: got %d %s, want 422 too_early", early.status, early.body)
	}
	if announced != e["not_before"] {
		t.Fatalf("not_before: the decline block says %v, the refusal %v; want the same instant", announced, e["not_before"])
	}
}

// TestConcurrentChargesOnAGoodCard: charges in flight together on a card whose last answer was
// an approval are never refused by the network caps: only on a card in a run of declines may
// an attempt in flight be the decline that fills Mastercard's cap.
func TestConcurrentChargesOnAGoodCard(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	k := g.key("m_mc_burst", "checkout")
	g.faults(`{"latency_ms": 400}`)
	body := `{"amount":1000,"currency":"usd","payment_method":"pm_sim_approve_mc_card4715","initiator":"customer"}`
	replies := make(chan reply, 14)
	for i := range 14 {
		go func() { replies <- g.charge(k, fmt.Sprintf("burst-%d", i), body) }()
	}
	for range 14 {
		if r := <-replies; r.status != 200 {
			t.Errorf("concurrent charge on a good card: got %d %s, want 200", r.status, r.body)
		}
	}
}
