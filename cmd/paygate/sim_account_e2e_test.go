package main

import (
	"path/filepath"
	"testing"

	"github.com/paygate/paygate/internal/dbtest"
)

// TestSimAccountKeptAcrossRestarts starts the built-in simulator twice with one
// PAYGATE_SIM_ACCOUNT_FILE and one database, as make run does across runs: the second
// simulator answers as the same account, so a card the first run blocked stays blocked and
// is never sent to the processor again.
func TestSimAccountKeptAcrossRestarts(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDatabase(t)
	file := filepath.Join(t.TempDir(), "sim_account")
	first := startGateway(t, "DATABASE_URL", db, "PAYGATE_SIM_ACCOUNT_FILE", file)
	k := first.key("m_restart", "checkout")
	body := `{"amount":1000,"currency":"usd","payment_method":"pm_card_chargeDeclinedStolenCard","initiator":"customer"}`
	if r := first.charge(k, "stolen-1", body); r.status != 402 {
		t.Fatalf("stolen card: got %d %s, want 402", r.status, r.body)
	}

	second := startGateway(t, "DATABASE_URL", db, "PAYGATE_SIM_ACCOUNT_FILE", file)
	r := second.charge(k, "stolen-2", body)
	if r.status != 422 {
		t.Fatalf("the stolen card after a restart: got %d %s, want 422 reattempt_not_allowed", r.status, r.body)
	}
	if e, _ := r.json(t)["error"].(map[string]any); e["reason"] != "never_reattempt" {
		t.Fatalf("the stolen card after a restart: got %s, want reason never_reattempt", r.body)
	}
	if n := len(second.ledger()); n != 0 {
		t.Fatalf("the restarted simulator received %d payments, want none", n)
	}
}
