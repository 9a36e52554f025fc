package processor

import (
	"context"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/sim"
	"github.com/paygate/paygate/retry"
)

// TestCreatePaymentAgainstTheSimulator drives the real stripe-go client through every fault
// the simulator injects, and a decline of every class, and checks the classification the
// retry loop will act on.
func TestCreatePaymentAgainstTheSimulator(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		script      string
		pm          string
		timeout     time.Duration
		wantClass   retry.Class
		wantMaybe   bool
		wantPI      bool
		wantDecline string
	}{
		{"approved", ``, "pm_card_visa", 0, retry.ClassSuccess, false, true, ""},
		{"503 before execution", `[{"status":503}]`, "pm_card_visa", 0, retry.ClassRetry, false, false, ""},
		{"502", `[{"status":502}]`, "pm_card_visa", 0, retry.ClassRetry, true, false, ""},
		{"429 with Retry-After", `[{"status":429,"retry_after":"30"}]`, "pm_card_visa", 0, retry.ClassRetryAfter, false, false, ""},
		{"429 lock_timeout", `[{"status":429,"code":"lock_timeout"}]`, "pm_card_visa", 0, retry.ClassBusy, true, false, ""},
		{"409 key in use", `[{"status":409}]`, "pm_card_visa", 0, retry.ClassBusy, true, false, ""},
		{"500 after commit", `[{"status":500,"after_commit":true}]`, "pm_card_visa", 0, retry.ClassUnknownFinal, true, false, ""},
		{"dropped response", `[{"drop_response":true}]`, "pm_card_visa", 0, retry.ClassOutcomeUnknown, true, false, ""},
		{"blackhole: timeout after send", `[{"blackhole":true}]`, "pm_card_visa", 300 * time.Millisecond, retry.ClassOutcomeUnknown, true, false, ""},
		{"slow: timeout after send", `[{"delay_ms":1000}]`, "pm_card_visa", 300 * time.Millisecond, retry.ClassOutcomeUnknown, true, false, ""},
		{"refused after the request arrived", `[{"refuse":true},{"refuse":true}]`, "pm_card_visa", 0, retry.ClassOutcomeUnknown, true, false, ""},
		{"invalid request", ``, "pm_no_such_method", 0, retry.ClassTerminal, false, false, ""},
		{"never: lost card", ``, "pm_card_chargeDeclinedLostCard", 0, retry.ClassDecline, false, true, "lost_card"},
		{"fix data: expired", ``, "pm_card_chargeDeclinedExpiredCard", 0, retry.ClassDecline, false, true, "expired_card"},
		{"funds", ``, "pm_card_visa_chargeDeclinedInsufficientFunds", 0, retry.ClassDecline, false, true, "insufficient_funds"},
		{"issuer transient", ``, "pm_card_chargeDeclinedProcessingError", 0, retry.ClassDecline, false, true, "processing_error"},
		{"generic", ``, "pm_card_chargeDeclined", 0, retry.ClassDecline, false, true, "generic_decline"},
		{"Mastercard advice code", ``, "pm_sim_decline_do_not_honor_mc_05_mac03", 0, retry.ClassDecline, false, true, "do_not_honor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupReads(t, -1)
			if tc.script != "" {
				steps, err := sim.ParseScript([]byte(tc.script))
				if err != nil {
					t.Fatal(err)
				}
				if err := b.sim.SetScript(steps); err != nil {
					t.Fatal(err)
				}
			}
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			a := b.client.CreatePayment(ctx, PaymentParams{Key: "pg_ch_" + tc.name, ChargeID: "ch_x", Amount: 1000,
				Currency: "usd", PaymentMethod: tc.pm})
			if a.Outcome.Class != tc.wantClass {
				t.Fatalf("class: got %s (status %d, code %s, err %v), want %s", a.Outcome.Class, a.Outcome.HTTPStatus,
					a.Outcome.ProcessorCode, a.Err, tc.wantClass)
			}
			if maybe := a.Outcome.MaybeExecuted || a.Outcome.Class.Executed(); maybe != tc.wantMaybe {
				t.Fatalf("may have executed: got %v, want %v", maybe, tc.wantMaybe)
			}
			if (a.PaymentIntent != "") != tc.wantPI {
				t.Fatalf("PaymentIntent id: got %q, want present=%v", a.PaymentIntent, tc.wantPI)
			}
			if tc.wantDecline != "" && (a.Decline == nil || a.Decline.DeclineCode != tc.wantDecline) {
				t.Fatalf("decline: got %+v, want decline_code %s", a.Decline, tc.wantDecline)
			}
			if tc.name == "Mastercard advice code" && (a.Decline.NetworkAdviceCode != "03" || a.Decline.NetworkDeclineCode != "05") {
				t.Fatalf("network codes from the raw JSON: got %+v, want MAC 03 and code 05", a.Decline)
			}
		})
	}
}

// TestReplayedAnswers: after a dropped answer, the same key is answered from the
// processor's store (Idempotent-Replayed): a success settles, and a stored 500 is final.
func TestReplayedAnswers(t *testing.T) {
	t.Parallel()
	b := setupReads(t, -1)
	steps, _ := sim.ParseScript([]byte(`[{"drop_response":true},{},{"status":500,"after_commit":true}]`))
	if err := b.sim.SetScript(steps); err != nil {
		t.Fatal(err)
	}
	p := PaymentParams{Key: "pg_ch_replay", ChargeID: "ch_replay", Amount: 1000, Currency: "usd", PaymentMethod: "pm_card_visa"}
	if a := b.client.CreatePayment(context.Background(), p); a.Outcome.Class != retry.ClassOutcomeUnknown {
		t.Fatalf("dropped: got %s", a.Outcome.Class)
	}
	a := b.client.CreatePayment(context.Background(), p)
	if a.Outcome.Class != retry.ClassSuccess || !a.Replayed {
		t.Fatalf("same key again: got %s replayed=%v, want a replayed success", a.Outcome.Class, a.Replayed)
	}
	p500 := PaymentParams{Key: "pg_ch_stored500", ChargeID: "ch_stored500", Amount: 1000, Currency: "usd", PaymentMethod: "pm_card_visa"}
	if a := b.client.CreatePayment(context.Background(), p500); a.Outcome.Class != retry.ClassUnknownFinal {
		t.Fatalf("500 after commit: got %s", a.Outcome.Class)
	}
	if a := b.client.CreatePayment(context.Background(), p500); a.Outcome.Class != retry.ClassStoredResult || !a.Replayed {
		t.Fatalf("stored 500 replayed: got %s replayed=%v, want stored_result", a.Outcome.Class, a.Replayed)
	}
}

// TestTransparentResendIsCounted: when a reused keep-alive connection is reset after the
// request was written, Go's transport re-sends the request on a new connection by itself.
// The adapter sees both writes: the attempt counts as sent (it may have executed) even
// though one answer came back.
func TestTransparentResendIsCounted(t *testing.T) {
	t.Parallel()
	b := setupReads(t, -1)
	warm := b.client.CreatePayment(context.Background(), PaymentParams{Key: "pg_ch_warm", ChargeID: "ch_warm",
		Amount: 1000, Currency: "usd", PaymentMethod: "pm_card_visa"})
	if warm.Outcome.Class != retry.ClassSuccess {
		t.Fatalf("warm-up: got %s", warm.Outcome.Class)
	}
	steps, _ := sim.ParseScript([]byte(`[{"refuse":true},{}]`))
	if err := b.sim.SetScript(steps); err != nil {
		t.Fatal(err)
	}
	a := b.client.CreatePayment(context.Background(), PaymentParams{Key: "pg_ch_resend", ChargeID: "ch_resend",
		Amount: 1000, Currency: "usd", PaymentMethod: "pm_card_visa"})
	if a.Outcome.Class != retry.ClassSuccess {
		t.Fatalf("after a reset on a reused connection: got %s (%v)", a.Outcome.Class, a.Err)
	}
	if a.Writes != 2 {
		t.Fatalf("writes: got %d, want 2 (the request and the transport's own re-send)", a.Writes)
	}
	for _, e := range b.sim.Ledger() {
		if e.IdempotencyKey == "pg_ch_resend" && (e.Requests != 2 || e.Effects != 1) {
			t.Fatalf("ledger: got %d requests and %d effects, want 2 and 1", e.Requests, e.Effects)
		}
	}
}

// TestCreatePaymentAuthentication: a card that asks for 3-D Secure leaves a customer-initiated
// PaymentIntent in requires_action, an unknown outcome for now (pending, for reconciliation),
// never a decline that would block the card; a merchant-initiated (off-session) charge cannot
// authenticate and is declined with authentication_required, as at Stripe.
func TestCreatePaymentAuthentication(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		pm          string
		offSession  bool
		wantClass   retry.Class
		wantStatus  string
		wantDecline string
	}{
		{"3DS2 card on session", "pm_card_threeDSecure2Required", false, retry.ClassUnknownFinal, "requires_action", ""},
		{"authentication required on session", "pm_card_authenticationRequired", false, retry.ClassUnknownFinal, "requires_action", ""},
		{"simulator card on session", "pm_sim_requires_action", false, retry.ClassUnknownFinal, "requires_action", ""},
		{"3DS2 card off session", "pm_card_threeDSecure2Required", true, retry.ClassDecline, "requires_payment_method", "authentication_required"},
		{"simulator card off session", "pm_sim_requires_action", true, retry.ClassDecline, "requires_payment_method", "authentication_required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupReads(t, -1)
			p := PaymentParams{Key: "pg_ch_3ds", ChargeID: "ch_3ds", Amount: 1000, Currency: "usd", PaymentMethod: tc.pm}
			if tc.offSession {
				p.Customer, p.OffSession = "cus_3ds", true
			}
			a := b.client.CreatePayment(testCtx(t), p)
			if a.Outcome.Class != tc.wantClass {
				t.Fatalf("class: got %s (status %d, code %s, err %v), want %s", a.Outcome.Class, a.Outcome.HTTPStatus,
					a.Outcome.ProcessorCode, a.Err, tc.wantClass)
			}
			if a.PaymentIntent == "" || a.Status != tc.wantStatus {
				t.Fatalf("PaymentIntent: got %q in %q, want one in %q", a.PaymentIntent, a.Status, tc.wantStatus)
			}
			if tc.wantDecline == "" {
				if a.Decline != nil {
					t.Fatalf("decline: got %+v, want none", a.Decline)
				}
				if !a.Outcome.Class.Executed() {
					t.Fatalf("class %s: want one that may have executed (pending)", a.Outcome.Class)
				}
			} else if a.Decline == nil || a.Decline.Code != tc.wantDecline || a.Decline.DeclineCode != tc.wantDecline {
				t.Fatalf("decline: got %+v, want code and decline_code %s", a.Decline, tc.wantDecline)
			}
			// Reconciliation reads the same status.
			got, res := b.client.Retrieve(testCtx(t), a.PaymentIntent)
			if res.Err != nil || got.Status != tc.wantStatus {
				t.Fatalf("retrieve: got %q (%v), want %q", got.Status, res.Err, tc.wantStatus)
			}
			// The same key replays the same answer.
			again := b.client.CreatePayment(testCtx(t), p)
			if !again.Replayed || again.Outcome.Class != tc.wantClass || again.PaymentIntent != a.PaymentIntent {
				t.Fatalf("same key again: got %s %q replayed=%v, want %s %q replayed", again.Outcome.Class,
					again.PaymentIntent, again.Replayed, tc.wantClass, a.PaymentIntent)
			}
		})
	}
}
