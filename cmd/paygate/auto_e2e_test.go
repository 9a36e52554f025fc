package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/charge"
)

// TestAutomaticReattemptChain runs a subscription's decline schedule on River. The schedule
// is days long: the test moves the card's history back in time instead of waiting.
func TestAutomaticReattemptChain(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "PAYGATE_RECONCILE_SWEEP", "1s")
	k := g.key("m_auto", "checkout")
	conn, err := pgx.Connect(context.Background(), g.env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	// A card that declines twice for insufficient funds, then approves.
	body := `{"amount":1500,"currency":"usd","payment_method":"pm_sim_decline_insufficient_funds_visa_51_card9_first2",
		"initiator":"merchant","customer":"cus_sub","reattempt":"auto"}`
	first := g.charge(k, "sub-1", body)
	if first.status != 402 || first.json(t)["next_reattempt_at"] == nil {
		t.Fatalf("first decline: got %d %s, want 402 with the next automatic reattempt", first.status, first.body)
	}
	root := first.json(t)["id"].(string)

	// advance moves the chain's history back by d and makes its scheduled step due now.
	advance := func(d time.Duration) {
		t.Helper()
		ctx := context.Background()
		if _, err := conn.Exec(ctx, `UPDATE card_attempts SET at = at - $2::interval WHERE chain = $1`, root, d); err != nil {
			t.Fatal(err)
		}
		historyRewritten(t, conn)
		if _, err := conn.Exec(ctx, `UPDATE charges SET next_reattempt_at = now() WHERE COALESCE(chain, id) = $1
			AND next_reattempt_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM charges n WHERE n.id = charges.next_reattempt_id)`, root); err != nil {
			t.Fatal(err)
		}
	}
	chain := func(n int) []any {
		t.Helper()
		var steps []any
		eventually(t, 20*time.Second, func() error {
			steps, _ = g.do(http.MethodGet, "/v1/charges/"+root, k, nil, "").json(t)["chain"].([]any)
			if len(steps) < n || steps[len(steps)-1].(map[string]any)["status"] == "processing" {
				return fmt.Errorf("chain: got %v, want %d steps, the last settled", steps, n)
			}
			return nil
		})
		return steps
	}

	advance(25 * time.Hour) // day +1
	steps := chain(2)
	if s := steps[1].(map[string]any); s["status"] != "declined" || s["reattempt_of"] != root || s["next_reattempt_at"] == nil {
		t.Fatalf("second step: got %v, want declined with a next slot", s)
	}
	advance(49 * time.Hour) // day +3
	steps = chain(3)
	if s := steps[2].(map[string]any); s["status"] != "succeeded" || s["next_reattempt_at"] != nil {
		t.Fatalf("third step: got %v, want succeeded, the chain over", s)
	}
	// A sweep that started after the chain's end found nothing due: nothing else runs.
	sweptSince(t, conn, dbNow(t, conn), charge.AutoSweepArgs{}.Kind(), charge.AutoReattemptArgs{}.Kind())
	if got := chain(3); len(got) != 3 {
		t.Fatalf("after success: got %d steps, want 3", len(got))
	}
	// Each step is its own charge under its own processor key, one effect each.
	for _, s := range steps {
		if n := g.ledger()["pg_"+s.(map[string]any)["id"].(string)]; n != 1 {
			t.Fatalf("step %v: %d effects, want 1", s, n)
		}
	}

	// A never-class decline ends a chain at once.
	lost := g.charge(k, "sub-2", `{"amount":1500,"currency":"usd","payment_method":"pm_sim_decline_lost_card_visa_41_card8",
		"initiator":"merchant","customer":"cus_sub","reattempt":"auto"}`)
	if lost.status != 402 || lost.json(t)["next_reattempt_at"] != nil {
		t.Fatalf("never-class decline: got %d %s, want 402 with no next step", lost.status, lost.body)
	}
}

// TestAutomaticReattemptScheduleToTheEnd: a card that keeps declining for lack of funds is
// reattempted at every slot of the funds schedule (+1, +3, +5, +7, +10, +14 days), then the
// chain stops with the schedule spent.
func TestAutomaticReattemptScheduleToTheEnd(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "PAYGATE_RECONCILE_SWEEP", "1s")
	k := g.key("m_auto_end", "checkout")
	conn, err := pgx.Connect(context.Background(), g.env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	first := g.charge(k, "sub-end", `{"amount":900,"currency":"usd","payment_method":"pm_sim_decline_insufficient_funds_visa_51_card11",
		"initiator":"merchant","customer":"cus_end","reattempt":"auto"}`)
	if first.status != 402 {
		t.Fatalf("first decline: got %d %s", first.status, first.body)
	}
	root := first.json(t)["id"].(string)
	// The days between the slots of the funds schedule.
	gaps := []time.Duration{24, 48, 48, 48, 72, 96}
	for i, gap := range gaps {
		ctx := context.Background()
		if _, err := conn.Exec(ctx, `UPDATE card_attempts SET at = at - $2::interval WHERE chain = $1`, root, gap*time.Hour+time.Hour); err != nil {
			t.Fatal(err)
		}
		historyRewritten(t, conn)
		if _, err := conn.Exec(ctx, `UPDATE charges SET next_reattempt_at = now() WHERE COALESCE(chain, id) = $1
			AND next_reattempt_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM charges n WHERE n.id = charges.next_reattempt_id)`, root); err != nil {
			t.Fatal(err)
		}
		var last map[string]any
		eventually(t, 20*time.Second, func() error {
			steps, _ := g.do(http.MethodGet, "/v1/charges/"+root, k, nil, "").json(t)["chain"].([]any)
			if len(steps) != i+2 || steps[i+1].(map[string]any)["status"] != "declined" {
				return fmt.Errorf("slot %d: got chain %v", i+1, steps)
			}
			last = steps[i+1].(map[string]any)
			return nil
		})
		if i < len(gaps)-1 && last["next_reattempt_at"] == nil {
			t.Fatalf("step %d: the chain stopped early: %v", i+2, last)
		}
		if i == len(gaps)-1 && last["next_reattempt_at"] != nil {
			t.Fatalf("the last slot scheduled another step: %v", last)
		}
	}
}

// TestAutomaticChainStopsWhenRefused: when the network rules refuse a chain's scheduled
// step (the card was blocked meanwhile), the chain ends there, once.
func TestAutomaticChainStopsWhenRefused(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "PAYGATE_RECONCILE_SWEEP", "1s")
	k := g.key("m_auto_stop", "checkout")
	conn, err := pgx.Connect(context.Background(), g.env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	first := g.charge(k, "stop-1", `{"amount":900,"currency":"usd","payment_method":"pm_sim_decline_insufficient_funds_visa_51_card12",
		"initiator":"merchant","customer":"cus_stop","reattempt":"auto"}`)
	if first.status != 402 || first.json(t)["next_reattempt_at"] == nil {
		t.Fatalf("first decline: got %d %s", first.status, first.body)
	}
	root := first.json(t)["id"].(string)
	// The same card is reported lost on another charge: a never-class decline blocks it.
	if r := g.charge(k, "stop-2", `{"amount":900,"currency":"usd","payment_method":"pm_sim_decline_lost_card_visa_41_card12","initiator":"customer"}`); r.status != 402 {
		t.Fatalf("lost card: got %d %s", r.status, r.body)
	}
	if _, err := conn.Exec(context.Background(), `UPDATE charges SET next_reattempt_at = now() WHERE id = $1`, root); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() error {
		if c := g.do(http.MethodGet, "/v1/charges/"+root, k, nil, "").json(t); c["next_reattempt_at"] != nil {
			return fmt.Errorf("the chain did not stop: %v", c)
		}
		return nil
	})
	// A sweep that started after the chain stopped tried nothing more.
	sweptSince(t, conn, dbNow(t, conn), charge.AutoSweepArgs{}.Kind(), charge.AutoReattemptArgs{}.Kind())
	var refused int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM reattempt_decisions WHERE chain = $1 AND NOT allowed`, root).Scan(&refused); err != nil {
		t.Fatal(err)
	}
	if refused != 1 {
		t.Fatalf("refused decisions for the chain: got %d, want 1", refused)
	}
}

// TestAutomaticChainWaitsWhenTooEarly: a step that the rules find too early (the card's
// history moved its slot) waits for the slot they name instead of ending the chain.
func TestAutomaticChainWaitsWhenTooEarly(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "PAYGATE_RECONCILE_SWEEP", "1s")
	k := g.key("m_auto_wait", "checkout")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, g.env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	first := g.charge(k, "wait-1", `{"amount":900,"currency":"usd","payment_method":"pm_sim_decline_insufficient_funds_visa_51_card13",
		"initiator":"merchant","customer":"cus_wait","reattempt":"auto"}`)
	if first.status != 402 || first.json(t)["next_reattempt_at"] == nil {
		t.Fatalf("first decline: got %d %s", first.status, first.body)
	}
	root := first.json(t)["id"].(string)
	// The step is made due while the card's history still says its slot is a day away.
	var slot time.Time
	if err := conn.QueryRow(ctx, `SELECT next_reattempt_at FROM charges WHERE id = $1`, root).Scan(&slot); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE charges SET next_reattempt_at = now() WHERE id = $1`, root); err != nil {
		t.Fatal(err)
	}
	var refused int
	eventually(t, 20*time.Second, func() error {
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM reattempt_decisions WHERE chain = $1 AND NOT allowed AND reason = 'too_early'`, root).Scan(&refused); err != nil {
			return err
		}
		if refused == 0 {
			return errors.New("the due step was never tried")
		}
		return nil
	})
	// A sweep that started after the deferral found the deferred step not due yet.
	sweptSince(t, conn, dbNow(t, conn), charge.AutoSweepArgs{}.Kind(), charge.AutoReattemptArgs{}.Kind())
	c := g.do(http.MethodGet, "/v1/charges/"+root, k, nil, "").json(t)
	next, _ := c["next_reattempt_at"].(string)
	at, err := time.Parse(time.RFC3339, next)
	if err != nil || at.Before(slot.Add(-time.Minute)) {
		t.Fatalf("next_reattempt_at after a too-early step: %v, want the slot (%s) or later", c["next_reattempt_at"], slot)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM reattempt_decisions WHERE chain = $1 AND NOT allowed`, root).Scan(&refused); err != nil {
		t.Fatal(err)
	}
	if refused != 1 {
		t.Fatalf("refused decisions for the chain: %d, want 1 (the deferred step waits)", refused)
	}
	var events int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM charge_events WHERE charge_id = $1 AND action = 'chain_deferred'`, root).Scan(&events); err != nil || events != 1 {
		t.Fatalf("chain_deferred events: %d (%v), want 1", events, err)
	}
	// The slot comes: the deferred step runs.
	if _, err := conn.Exec(ctx, `UPDATE card_attempts SET at = at - interval '25 hours' WHERE chain = $1`, root); err != nil {
		t.Fatal(err)
	}
	historyRewritten(t, conn)
	if _, err := conn.Exec(ctx, `UPDATE charges SET next_reattempt_at = now() WHERE id = $1`, root); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() error {
		steps, _ := g.do(http.MethodGet, "/v1/charges/"+root, k, nil, "").json(t)["chain"].([]any)
		if len(steps) != 2 || steps[1].(map[string]any)["status"] != "declined" {
			return fmt.Errorf("the deferred step did not run when due: chain %v", steps)
		}
		return nil
	})
}

// TestAutomaticChainEndsWhenAnotherReattemptIsLive: when the merchant's own reattempt of the
// declined charge succeeded, the chain's due step is not run (the order is paid): the chain
// ends, once, and no dead letter follows.
func TestAutomaticChainEndsWhenAnotherReattemptIsLive(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "PAYGATE_RECONCILE_SWEEP", "1s")
	k := g.key("m_auto_live", "checkout")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, g.env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	first := g.charge(k, "live-1", `{"amount":900,"currency":"usd","payment_method":"pm_sim_decline_insufficient_funds_visa_51_card14",
		"initiator":"merchant","customer":"cus_live","reattempt":"auto"}`)
	if first.status != 402 || first.json(t)["next_reattempt_at"] == nil {
		t.Fatalf("first decline: got %d %s", first.status, first.body)
	}
	root := first.json(t)["id"].(string)
	// The merchant reattempts it with another card, which succeeds.
	manual := g.do(http.MethodPost, "/v1/charges/"+root+"/reattempt", k, map[string]string{"Idempotency-Key": "live-re"},
		`{"payment_method":"pm_sim_approve_card15"}`)
	if manual.status != 200 {
		t.Fatalf("the merchant's reattempt: got %d %s, want 200", manual.status, manual.body)
	}
	// A second one is refused: the order is paid.
	again := g.do(http.MethodPost, "/v1/charges/"+root+"/reattempt", k, map[string]string{"Idempotency-Key": "live-re-2"},
		`{"payment_method":"pm_sim_approve_card16"}`)
	if e, _ := again.json(t)["error"].(map[string]any); again.status != 409 || e["code"] != "duplicate_reattempt" || e["charge"] != manual.json(t)["id"] {
		t.Fatalf("a second reattempt: got %d %s, want 409 duplicate_reattempt naming the first", again.status, again.body)
	}
	// The chain's step comes due, its slot reached.
	if _, err := conn.Exec(ctx, `UPDATE card_attempts SET at = at - interval '25 hours' WHERE chain = $1`, root); err != nil {
		t.Fatal(err)
	}
	historyRewritten(t, conn)
	if _, err := conn.Exec(ctx, `UPDATE charges SET next_reattempt_at = now() WHERE id = $1`, root); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() error {
		var stopped int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM charge_events WHERE charge_id = $1 AND action = 'chain_stopped'
			AND reason = 'reattempt_live'`, root).Scan(&stopped); err != nil {
			return err
		}
		if stopped != 1 {
			return fmt.Errorf("the chain did not stop: %d chain_stopped events", stopped)
		}
		return nil
	})
	var dead int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'discarded'`).Scan(&dead); err != nil || dead != 0 {
		t.Fatalf("dead letters: %d (%v), want none", dead, err)
	}
}

// historyRewritten tells the cards' network-rules states that a test rewrote their history
// in place (moving attempts back in time, changing outcomes), which nothing but a test does:
// every card's next decision reads its whole history again.
func historyRewritten(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), `
		INSERT INTO card_states (processor_account, fingerprint, through_at)
		SELECT DISTINCT processor_account, fingerprint, '0001-01-01 00:00:00+00'::timestamptz FROM card_attempts
		ON CONFLICT (processor_account, fingerprint) DO UPDATE SET stale = true, version = card_states.version + 1`); err != nil {
		t.Fatal(err)
	}
}
