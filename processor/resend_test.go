package processor

import (
	"context"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/sim"
	"github.com/paygate/paygate/retry"
)

// warmConnection makes one read so that the client's next write goes over a reused
// keep-alive connection: only then does Go's transport re-send a request by itself after a
// reset (reads never take a script step).
func warmConnection(t *testing.T, b *readBundle) {
	t.Helper()
	if _, err := b.client.Account(testCtx(t)); err != nil {
		t.Fatalf("warm-up read: %v", err)
	}
}

// script sets the simulator's fault script.
func script(t *testing.T, b *readBundle, s string) {
	t.Helper()
	steps, err := sim.ParseScript([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.sim.SetScript(steps); err != nil {
		t.Fatal(err)
	}
}

// TestResendAfterResetMayHaveExecuted: a write reset after it arrived may have executed.
// When Go's transport re-sends it by itself on a fresh connection, the attempt's answer is
// the re-send's; unless that answer settles the operation under the key (an approval, a
// decline), the attempt may have executed by its first write, whatever the answer says of
// the re-send (503 or 429 before execution, 400, 409).
func TestResendAfterResetMayHaveExecuted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		script    string
		pm        string
		wantClass retry.Class
		wantMaybe bool
	}{
		{"503 before execution", `[{"refuse":true},{"status":503},{"status":503},{"status":503}]`, "pm_card_visa", retry.ClassRetry, true},
		{"400 invalid", `[{"refuse":true},{"status":400}]`, "pm_card_visa", retry.ClassTerminal, true},
		{"429 retry after 30 s", `[{"refuse":true},{"status":429,"retry_after":"30"}]`, "pm_card_visa", retry.ClassRetryAfter, true},
		{"409 key in use", `[{"refuse":true},{"status":409}]`, "pm_card_visa", retry.ClassBusy, true},
		{"500 before execution", `[{"refuse":true},{"status":500}]`, "pm_card_visa", retry.ClassUnknownFinal, true},
		{"approved: settled", `[{"refuse":true},{}]`, "pm_card_visa", retry.ClassSuccess, false},
		{"declined: settled", `[{"refuse":true},{}]`, "pm_card_visa_chargeDeclinedInsufficientFunds", retry.ClassDecline, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupReads(t, -1)
			warmConnection(t, b)
			script(t, b, tc.script)
			a := b.client.CreatePayment(testCtx(t), PaymentParams{Key: "pg_ch_resend", ChargeID: "ch_resend",
				Amount: 1000, Currency: "usd", PaymentMethod: tc.pm})
			if a.Writes != 2 {
				t.Fatalf("writes: got %d, want 2 (the request and the transport's own re-send)", a.Writes)
			}
			if a.Outcome.Class != tc.wantClass {
				t.Fatalf("class: got %s (status %d, code %s, err %v), want %s", a.Outcome.Class, a.Outcome.HTTPStatus,
					a.Outcome.ProcessorCode, a.Err, tc.wantClass)
			}
			if maybe := a.Outcome.MaybeExecuted || a.Outcome.Class.Executed(); maybe != tc.wantMaybe {
				t.Fatalf("may have executed: got %v, want %v", maybe, tc.wantMaybe)
			}
		})
	}
}

// TestRetryLoopAfterResend runs the retry loop the gateway uses over real HTTP: an attempt
// whose first write was reset and re-sent by the transport makes the run uncertain, so it
// ends pending, never failed, unless a later answer under the key settles it; and the loop
// still retries it under the same key.
func TestRetryLoopAfterResend(t *testing.T) {
	t.Parallel()
	policy := retry.Policy{
		Deadline: 5 * time.Second, AttemptTimeout: 2 * time.Second, Base: 5 * time.Millisecond, Cap: 20 * time.Millisecond,
		MaxAttempts: 3, RetryAfterCap: time.Second, MinAttempt: 50 * time.Millisecond, AnswerMargin: 10 * time.Millisecond,
		BusyWait: 10 * time.Millisecond, MaxClockSkew: 30 * time.Second,
	}
	for _, tc := range []struct {
		name         string
		script       string
		wantStatus   retry.Status
		wantStop     retry.StopReason
		wantAttempts int
		wantEffects  int
	}{
		{"503s until the attempts run out", `[{"refuse":true},{"status":503},{"status":503},{"status":503},{"status":503}]`,
			retry.StatusPending, retry.StopMaxAttempts, 3, 0},
		{"400 invalid", `[{"refuse":true},{"status":400}]`, retry.StatusPending, retry.StopTerminal, 1, 0},
		{"429 longer than the deadline", `[{"refuse":true},{"status":429,"retry_after":"30"}]`,
			retry.StatusPending, retry.StopDeadline, 1, 0},
		{"a later approval settles", `[{"refuse":true},{"status":503},{}]`, retry.StatusSucceeded, retry.StopSucceeded, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupReads(t, -1)
			warmConnection(t, b)
			script(t, b, tc.script)
			p := PaymentParams{Key: "pg_ch_loop", ChargeID: "ch_loop", Amount: 1000, Currency: "usd", PaymentMethod: "pm_card_visa"}
			rep, err := retry.Do(testCtx(t), policy, retry.Operation{IdempotencyKey: p.Key},
				func(ctx context.Context, _ retry.Attempt) retry.Outcome {
					return b.client.CreatePayment(ctx, p).Outcome
				})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Result.Status != tc.wantStatus || rep.Stop != tc.wantStop {
				t.Fatalf("result: got %s stopped by %s, want %s stopped by %s", rep.Result, rep.Stop, tc.wantStatus, tc.wantStop)
			}
			if len(rep.Attempts) != tc.wantAttempts {
				t.Fatalf("attempts: got %d, want %d", len(rep.Attempts), tc.wantAttempts)
			}
			if !rep.Attempts[0].MaybeExecuted {
				t.Fatalf("first attempt: got may have executed false, want true (its first write was reset)")
			}
			effects := 0
			for _, e := range b.sim.Ledger() {
				if e.IdempotencyKey == p.Key {
					effects += e.Effects
				}
			}
			if effects != tc.wantEffects {
				t.Fatalf("effects under the key: got %d, want %d", effects, tc.wantEffects)
			}
		})
	}
}
