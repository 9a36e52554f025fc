package sim_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/paymentintent"

	"github.com/paygate/paygate/internal/sim"
)

func TestScriptedStatusIsNotStored(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name            string
		step            string
		status          int
		errorType       stripe.ErrorType
		code            stripe.ErrorCode
		retryAfter      string
		shouldRetry     string
		typedErrorCheck func(error) bool
	}{
		{"503", `{"status": 503}`, 503, stripe.ErrorTypeAPI, "", "", "", isAPIError},
		{"502", `{"status": 502}`, 502, stripe.ErrorTypeAPI, "", "", "", isAPIError},
		{"500 before commit", `{"status": 500}`, 500, stripe.ErrorTypeAPI, "", "", "", isAPIError},
		{"429 seconds", `{"status": 429, "retry_after": "30"}`, 429, stripe.ErrorTypeInvalidRequest, "rate_limit", "30", "", nil},
		{"429 number", `{"status": 429, "retry_after": 2}`, 429, stripe.ErrorTypeInvalidRequest, "rate_limit", "2", "", nil},
		{"429 http date", `{"status": 429, "retry_after": "Wed, 21 Oct 2015 07:28:00 GMT"}`, 429, stripe.ErrorTypeInvalidRequest, "rate_limit", "Wed, 21 Oct 2015 07:28:00 GMT", "", nil},
		{"429 lock timeout", `{"status": 429, "code": "lock_timeout"}`, 429, stripe.ErrorTypeInvalidRequest, "lock_timeout", "", "true", nil},
		{"409", `{"status": 409}`, 409, stripe.ErrorTypeInvalidRequest, "idempotency_key_in_use", "", "true", nil},
		{"503 should not retry", `{"status": 503, "should_retry": false}`, 503, stripe.ErrorTypeAPI, "", "", "false", isAPIError},
		{"429 garbage retry after", `{"status": 429, "retry_after": "soon-ish"}`, 429, stripe.ErrorTypeInvalidRequest, "rate_limit", "soon-ish", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.script(t, "["+tc.step+"]")
			_, err := b.pi.New(charge("pm_card_visa", "k"))
			se := stripeError(t, err)
			if se.HTTPStatusCode != tc.status || se.Type != tc.errorType || se.Code != tc.code {
				t.Errorf("got %d %s %q, want %d %s %q", se.HTTPStatusCode, se.Type, se.Code, tc.status, tc.errorType, tc.code)
			}
			if tc.typedErrorCheck != nil && !tc.typedErrorCheck(se.Err) {
				t.Errorf("got typed error %T, want the matching stripe-go type", se.Err)
			}
			h := se.LastResponse.Header
			if got := h.Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("got Retry-After %q, want %q", got, tc.retryAfter)
			}
			if got := h.Get("Stripe-Should-Retry"); got != tc.shouldRetry {
				t.Errorf("got Stripe-Should-Retry %q, want %q", got, tc.shouldRetry)
			}
			if !strings.HasPrefix(se.RequestID, "req_") {
				t.Errorf("got Request-Id %q, want req_...", se.RequestID)
			}
			// Nothing was stored: the retry with the same key executes.
			pi, err := b.pi.New(charge("pm_card_visa", "k"))
			if err != nil {
				t.Fatalf("got %v on the retry, want success", err)
			}
			if got := pi.LastResponse.Header.Get("Idempotent-Replayed"); got != "" {
				t.Errorf("got Idempotent-Replayed %q, want a first execution", got)
			}
			if e := b.ledgerEntry(t, "k"); e.Requests != 2 || e.Executions != 1 || e.Effects != 1 {
				t.Errorf("got ledger %+v, want 2 requests, 1 execution, 1 effect", e)
			}
		})
	}
}

func isAPIError(err error) bool {
	_, ok := err.(*stripe.APIError)
	return ok
}

func TestAfterCommitIsStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.script(t, `[{"status": 500, "after_commit": true}]`)
	_, err := b.pi.New(charge("pm_card_visa", "k"))
	se := stripeError(t, err)
	if se.HTTPStatusCode != 500 || se.Type != stripe.ErrorTypeAPI {
		t.Fatalf("got %d %s, want 500 api_error", se.HTTPStatusCode, se.Type)
	}
	e := b.ledgerEntry(t, "k")
	if e.Effects != 1 || e.Status != "succeeded" {
		t.Errorf("got ledger %+v, want the charge made (1 effect, succeeded)", e)
	}
	_, err = b.pi.New(charge("pm_card_visa", "k"))
	se2 := stripeError(t, err)
	if se2.HTTPStatusCode != 500 || se2.LastResponse.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("got %d replayed %q, want the stored 500 replayed", se2.HTTPStatusCode,
			se2.LastResponse.Header.Get("Idempotent-Replayed"))
	}
	if string(se.LastResponse.RawJSON) != string(se2.LastResponse.RawJSON) {
		t.Errorf("got replay body %s, want %s", se2.LastResponse.RawJSON, se.LastResponse.RawJSON)
	}
	// Reads find the PaymentIntent the 500 hid.
	it := b.pi.List(&stripe.PaymentIntentListParams{})
	if !it.Next() || it.PaymentIntent().ID != e.PaymentIntent {
		t.Errorf("got list err %v, want the committed PaymentIntent %s", it.Err(), e.PaymentIntent)
	}
}

// TestScriptedDecline: a 402 step declines the payment it executes with the card error's
// fields it names, as Stripe answers a decline (a card_error, the PaymentIntent in
// requires_payment_method with last_payment_error), stored under the key and replayed.
// Codes from Stripe's "Decline codes" and "Error codes"; network codes from Checkout.com's
// "Visa response codes".
func TestScriptedDecline(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, step, pm          string
		code, declineCode       string
		network, advice, mac    string
		message, param, outcome string
	}{
		{name: "no fields: Stripe's generic decline", step: `{"status": 402}`, pm: "pm_card_visa",
			code: "card_declined", declineCode: "generic_decline", message: "Your card was declined.", outcome: "declined_by_network"},
		{name: "decline and network codes", pm: "pm_card_visa",
			step: `{"status": 402, "decline_code": "insufficient_funds", "network_decline_code": "51", "advice_code": "try_again_later"}`,
			code: "card_declined", declineCode: "insufficient_funds", network: "51", advice: "try_again_later",
			message: "Your card has insufficient funds.", outcome: "declined_by_network"},
		{name: "Mastercard advice", pm: "pm_card_mastercard",
			step: `{"status": 402, "decline_code": "do_not_honor", "network_decline_code": "05", "network_advice_code": "03"}`,
			code: "card_declined", declineCode: "do_not_honor", network: "05", mac: "03", message: "Your card was declined.", outcome: "declined_by_network"},
		{name: "a decline code with Stripe's own error code", step: `{"status": 402, "decline_code": "expired_card"}`, pm: "pm_card_visa",
			code: "expired_card", declineCode: "expired_card", message: "Your card has expired.", param: "exp_month", outcome: "declined_by_network"},
		{name: "an error code alone", step: `{"status": 402, "code": "incorrect_address"}`, pm: "pm_card_visa",
			code: "incorrect_address", message: "Your card's address is incorrect.", param: "address_line1", outcome: "declined_by_network"},
		{name: "Stripe's decline rate limit", step: `{"status": 402, "code": "card_decline_rate_limit_exceeded"}`, pm: "pm_card_visa",
			code: "card_decline_rate_limit_exceeded", message: "You have exceeded the maximum number of declines on this card in the last 24 hour period. " +
				"Please contact us via https://support.stripe.com/contact if you need further assistance.", outcome: "not_sent_to_network"},
		{name: "Visa 83 with a message", step: `{"status": 402, "decline_code": "fraudulent", "network_decline_code": "83", "message": "Blocked."}`,
			pm: "pm_card_visa", code: "card_declined", declineCode: "fraudulent", network: "83", message: "Blocked.", outcome: "declined_by_network"},
		{name: "a card that would approve or ask for 3-D Secure declines",
			step: `{"status": 402, "decline_code": "mobile_device_authentication_required"}`, pm: "pm_card_authenticationRequired",
			code: "card_declined", declineCode: "mobile_device_authentication_required",
			message: "Your card was declined. This transaction requires authentication.", outcome: "declined_by_network"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.script(t, "["+tc.step+"]")
			_, err := b.pi.New(charge(tc.pm, "k"))
			se := stripeError(t, err)
			if se.HTTPStatusCode != http.StatusPaymentRequired || se.Type != stripe.ErrorTypeCard {
				t.Fatalf("got %d %s, want 402 card_error", se.HTTPStatusCode, se.Type)
			}
			if string(se.Code) != tc.code || string(se.DeclineCode) != tc.declineCode || se.Msg != tc.message || se.Param != tc.param {
				t.Errorf("got code %q decline_code %q message %q param %q, want %q %q %q %q",
					se.Code, se.DeclineCode, se.Msg, se.Param, tc.code, tc.declineCode, tc.message, tc.param)
			}
			raw := rawError(t, se)
			for field, want := range map[string]string{"network_decline_code": tc.network, "advice_code": tc.advice, "network_advice_code": tc.mac} {
				if got, _ := raw[field].(string); got != want {
					t.Errorf("got %s %q, want %q", field, got, want)
				}
			}
			pi := se.PaymentIntent
			if pi == nil || pi.Status != stripe.PaymentIntentStatusRequiresPaymentMethod || pi.LastPaymentError == nil ||
				pi.LastPaymentError.Type != stripe.ErrorTypeCard || string(pi.LastPaymentError.Code) != tc.code {
				t.Fatalf("got payment_intent %+v, want requires_payment_method with the card_error", pi)
			}
			// Executed and stored like any decline: one effect, the same 402 replayed.
			if e := b.ledgerEntry(t, "k"); e.Executions != 1 || e.Effects != 1 || e.Status != "requires_payment_method" {
				t.Errorf("got ledger %+v, want 1 execution, 1 effect, requires_payment_method", e)
			}
			_, err = b.pi.New(charge(tc.pm, "k"))
			again := stripeError(t, err)
			if again.LastResponse.Header.Get("Idempotent-Replayed") != "true" || string(again.LastResponse.RawJSON) != string(se.LastResponse.RawJSON) {
				t.Errorf("got %d replayed %q, want the stored 402 replayed", again.HTTPStatusCode, again.LastResponse.Header.Get("Idempotent-Replayed"))
			}
			got, err := b.pi.Get(pi.ID, &stripe.PaymentIntentParams{Expand: []*string{stripe.String("latest_charge")}})
			if err != nil {
				t.Fatal(err)
			}
			if got.LatestCharge == nil || got.LatestCharge.Outcome == nil || got.LatestCharge.Outcome.NetworkStatus != tc.outcome {
				t.Errorf("got latest_charge %+v, want outcome.network_status %s", got.LatestCharge, tc.outcome)
			}
		})
	}
}

// TestScripted424: Stripe's 424, a failed external dependency. Before execution nothing is
// stored and a retry with the key executes; with after_commit the effect exists and the 424
// is replayed.
func TestScripted424(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.script(t, `[{"status": 424}, {}, {"status": 424, "after_commit": true}]`)
	_, err := b.pi.New(charge("pm_card_visa", "before"))
	se := stripeError(t, err)
	if se.HTTPStatusCode != http.StatusFailedDependency || se.Type != stripe.ErrorTypeAPI {
		t.Fatalf("got %d %s, want 424 api_error", se.HTTPStatusCode, se.Type)
	}
	if _, err := b.pi.New(charge("pm_card_visa", "before")); err != nil {
		t.Fatalf("retry after a 424 before execution: got %v, want the charge made", err)
	}
	_, err = b.pi.New(charge("pm_card_visa", "after"))
	if se := stripeError(t, err); se.HTTPStatusCode != http.StatusFailedDependency {
		t.Fatalf("got %d, want 424", se.HTTPStatusCode)
	}
	if e := b.ledgerEntry(t, "after"); e.Effects != 1 || e.Status != "succeeded" {
		t.Errorf("got ledger %+v, want the charge made behind the 424", e)
	}
	_, err = b.pi.New(charge("pm_card_visa", "after"))
	if se := stripeError(t, err); se.HTTPStatusCode != http.StatusFailedDependency || se.LastResponse.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("got %d replayed %q, want the stored 424 replayed", se.HTTPStatusCode, se.LastResponse.Header.Get("Idempotent-Replayed"))
	}
}

// traced sends the standard charge with key through a client using hc and
// reports whether net/http wrote the whole request.
func traced(t *testing.T, b *bundle, hc *http.Client, key string, timeout time.Duration) (pi *stripe.PaymentIntent, wrote bool, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) { wrote = i.Err == nil },
	})
	c := paymentintent.Client{B: newBackend(b.ts.URL, hc), Key: testKey}
	p := charge("pm_card_visa", key)
	p.Context = ctx
	pi, err = c.New(p)
	return pi, wrote, err
}

func TestDropResponse(t *testing.T) {
	t.Parallel()
	for _, keepAlive := range []bool{false, true} {
		t.Run(map[bool]string{false: "fresh connection", true: "reused connection"}[keepAlive], func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: !keepAlive}}
			if keepAlive {
				warmUp(t, b, hc)
			}
			b.script(t, `[{"drop_response": true}]`)
			_, wrote, err := traced(t, b, hc, "k", 5*time.Second)
			var se *stripe.Error
			if err == nil || errors.As(err, &se) {
				t.Fatalf("got %v, want a transport error", err)
			}
			if !wrote || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("got wrote=%v err=%v, want the request written and unexpected EOF", wrote, err)
			}
			e := b.ledgerEntry(t, "k")
			if e.Requests != 1 || e.Effects != 1 {
				t.Errorf("got ledger %+v, want 1 request and its effect (no silent resend)", e)
			}
			pi, err := b.pi.New(charge("pm_card_visa", "k"))
			if err != nil || pi.ID != e.PaymentIntent || pi.LastResponse.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("got %v %v, want the stored answer for %s replayed", err, pi.ID, e.PaymentIntent)
			}
		})
	}
}

func TestDropResponseOfReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first, err := b.pi.New(charge("pm_card_visa", "k"))
	if err != nil {
		t.Fatal(err)
	}
	b.script(t, `[{"drop_response": true}]`)
	if _, err := b.pi.New(charge("pm_card_visa", "k")); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v, want the replayed answer lost (unexpected EOF)", err)
	}
	again, err := b.pi.New(charge("pm_card_visa", "k"))
	if err != nil || again.ID != first.ID {
		t.Fatalf("got %v %v, want the replay of %s", err, again, first.ID)
	}
	if e := b.ledgerEntry(t, "k"); e.Requests != 3 || e.Executions != 1 || e.Replays != 2 || e.Effects != 1 {
		t.Errorf("got ledger %+v, want 3 requests, 1 execution, 2 replays, 1 effect", e)
	}
}

func TestRefuse(t *testing.T) {
	t.Parallel()
	t.Run("fresh connection", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.script(t, `[{"refuse": true}]`)
		_, wrote, err := traced(t, b, &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, "k", 5*time.Second)
		var se *stripe.Error
		if err == nil || errors.As(err, &se) {
			t.Fatalf("got %v, want a transport error", err)
		}
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("got %v, want connection reset by peer", err)
		}
		if !wrote {
			t.Errorf("got wrote=false, want net/http to report the request written (the reset follows it)")
		}
		if e := b.ledgerEntry(t, "k"); e.Requests != 1 || e.Executions != 0 {
			t.Errorf("got ledger %+v, want 1 request and nothing executed", e)
		}
		if got := b.sim.Stats().IdempotencyKeys; got != 0 {
			t.Errorf("got %d keys, want the refused request to hold none", got)
		}
	})
	t.Run("reused connection is resent by net/http", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		hc := &http.Client{Transport: &http.Transport{}}
		warmUp(t, b, hc)
		b.script(t, `[{"refuse": true}]`)
		pi, _, err := traced(t, b, hc, "k", 5*time.Second)
		if err != nil {
			t.Fatalf("got %v, want net/http's own resend to succeed", err)
		}
		e := b.ledgerEntry(t, "k")
		if e.Requests != 2 || e.Executions != 1 || e.PaymentIntent != pi.ID {
			t.Errorf("got ledger %+v, want the refused request and its resend, executed once", e)
		}
	})
}

func TestBlackhole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.script(t, `[{"blackhole": true}]`)
	start := time.Now()
	_, wrote, err := traced(t, b, http.DefaultClient, "k", 400*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || !wrote {
		t.Fatalf("got wrote=%v err=%v, want the request written and the client timing out", wrote, err)
	}
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Errorf("got an answer after %v, want none before the client's timeout", d)
	}
	waitFor(t, func() bool { return b.sim.Stats().HeldRequests == 0 })
	if e := b.ledgerEntry(t, "k"); e.Executions != 0 || e.Effects != 0 {
		t.Errorf("got ledger %+v, want nothing executed", e)
	}
	pi, err := b.pi.New(charge("pm_card_visa", "k"))
	if err != nil || pi.LastResponse.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("got %v, want the retry executed as a first request", err)
	}
}

func TestBlackholeReleasedByReset(t *testing.T) {
	t.Parallel()
	b := setup(t, freshConnections())
	b.script(t, `[{"blackhole": true}]`)
	done := make(chan error, 1)
	go func() {
		_, err := b.pi.New(charge("pm_card_visa", "k"))
		done <- err
	}()
	waitFor(t, func() bool { return b.sim.Stats().HeldRequests == 1 })
	b.sim.Reset()
	select {
	case err := <-done:
		var se *stripe.Error
		if err == nil || errors.As(err, &se) {
			t.Errorf("got %v, want the connection closed unanswered", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the held request was not released by Reset")
	}
}

func TestSkewedDate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const date = "Wed, 21 Oct 2015 07:28:00 GMT"
	b.script(t, `[{"date": "`+date+`"}]`)
	pi, err := b.pi.New(charge("pm_card_visa", "k"))
	if err != nil {
		t.Fatal(err)
	}
	if got := pi.LastResponse.Header.Get("Date"); got != date {
		t.Errorf("got Date %q, want %q", got, date)
	}
}

func TestServeShutsDownWithHeldRequests(t *testing.T) {
	t.Parallel()
	s := sim.New(sim.Config{SearchLag: -1})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	if err := s.SetScript([]sim.Step{{Blackhole: true}}); err != nil {
		t.Fatal(err)
	}
	intents := paymentintent.Client{B: newBackend("http://"+ln.Addr().String(), nil), Key: testKey}
	sent := make(chan error, 1)
	go func() {
		_, err := intents.New(charge("pm_card_visa", "k"))
		sent <- err
	}()
	waitFor(t, func() bool { return s.Stats().HeldRequests == 1 })
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("got Serve error %v, want nil after the context ended", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return within 5s of the context ending")
	}
	if err := <-sent; err == nil {
		t.Error("got an answer for the held request, want its connection closed")
	}
}

func TestDelay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.script(t, `[{"delay_ms": 150}]`)
	start := time.Now()
	pi, err := b.pi.New(charge("pm_card_visa", "k"))
	if err != nil || pi.Status != stripe.PaymentIntentStatusSucceeded {
		t.Fatalf("got %v, want success after the delay", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("got the answer after %v, want at least 150ms", d)
	}
}

func TestDelayedRequestExecutesAfterClientLeft(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.script(t, `[{"delay_ms": 1000}]`)
	_, wrote, err := traced(t, b, http.DefaultClient, "k", 400*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || !wrote {
		t.Fatalf("got wrote=%v err=%v, want a client timeout after sending", wrote, err)
	}
	waitFor(t, func() bool { return b.ledgerEntry(t, "k").Effects == 1 })
}

func TestRandomFaults(t *testing.T) {
	t.Parallel()
	outcomes := func(seed uint64) string {
		b := setup(t)
		if err := b.sim.SetFaults(sim.Faults{ErrorRate: 0.5, Seed: &seed}); err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		for i := range 20 {
			_, err := b.pi.New(charge("pm_card_visa", "k"+string(rune('a'+i))))
			if err != nil {
				if se := stripeError(t, err); se.HTTPStatusCode != 503 {
					t.Fatalf("got %d, want 503", se.HTTPStatusCode)
				}
				sb.WriteByte('x')
				continue
			}
			sb.WriteByte('.')
		}
		// Reads are not affected unless asked for.
		if _, err := b.acct.Get(); err != nil {
			t.Errorf("got %v on a read, want random faults on writes only", err)
		}
		return sb.String()
	}
	first, second := outcomes(42), outcomes(42)
	if first != second {
		t.Errorf("got %s then %s with the same seed, want the same faults", first, second)
	}
	if !strings.Contains(first, "x") || !strings.Contains(first, ".") {
		t.Errorf("got %s at error rate 0.5, want both faults and successes", first)
	}
}

func TestRandomFaultsOnReads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if err := b.sim.SetFaults(sim.Faults{ErrorRate: 1, Status: 502, IncludeReads: true, RetryAfter: "1"}); err != nil {
		t.Fatal(err)
	}
	_, err := b.acct.Get()
	se := stripeError(t, err)
	if se.HTTPStatusCode != 502 || se.LastResponse.Header.Get("Retry-After") != "1" {
		t.Errorf("got %d Retry-After %q, want 502 with Retry-After 1", se.HTTPStatusCode, se.LastResponse.Header.Get("Retry-After"))
	}
}

func TestScriptAppliesInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.script(t, `{"steps": [{"status": 503}, {"status": 429}, {}, {"status": 503}]}`)
	var got []int
	for range 5 {
		_, err := b.pi.New(charge("pm_card_visa", "k"))
		if err != nil {
			got = append(got, stripeError(t, err).HTTPStatusCode)
			continue
		}
		got = append(got, 200)
	}
	want := []int{503, 429, 200, 503, 200}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got statuses %v, want %v", got, want)
		}
	}
	// Reads do not consume steps.
	b.script(t, `[{"status": 503}]`)
	if _, err := b.acct.Get(); err != nil {
		t.Errorf("got %v on a read, want the step kept for the next write", err)
	}
	if got := len(b.sim.Script()); got != 1 {
		t.Errorf("got %d steps left, want 1", got)
	}
}

func TestControlEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t)
	post := func(path, body string) (int, string) {
		res, err := http.Post(b.ts.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(out)
	}
	for _, bad := range []string{
		`[{"status": 302}]`, `[{"refuse": true, "status": 503}]`, `[{"blackhole": true, "drop_response": true}]`,
		`[{"status": 503, "drop_response": true}]`, `[{"delay_ms": -1}]`, `[{"sttus": 503}]`, `{`,
		`[{"retry_after": "30\r\nX-Evil: 1"}]`,
		`[{"status": 503, "decline_code": "insufficient_funds"}]`, `[{"network_decline_code": "51"}]`,
		`[{"status": 402, "after_commit": true}]`, `[{"status": 402, "decline_code": "x\u00e9"}]`,
	} {
		if status, body := post("/_sim/script", bad); status != http.StatusBadRequest || !strings.Contains(body, `"error"`) {
			t.Errorf("POST /_sim/script %s: got %d %s, want 400 with an error", bad, status, body)
		}
	}
	for _, bad := range []string{`{"error_rate": 2}`, `{"status": 200}`, `{"latency_ms": -5}`, `{"rate": 1}`} {
		if status, _ := post("/_sim/faults", bad); status != http.StatusBadRequest {
			t.Errorf("POST /_sim/faults %s: got %d, want 400", bad, status)
		}
	}
	if status, body := post("/_sim/faults", `{"error_rate": 0.25, "latency_ms": 1, "seed": 7}`); status != 200 ||
		!strings.Contains(body, `"error_rate": 0.25`) {
		t.Errorf("POST /_sim/faults: got %d %s, want the faults echoed", status, body)
	}
	if status, _ := post("/_sim/reset", ``); status != 200 {
		t.Errorf("POST /_sim/reset: got %d, want 200", status)
	}
	if got := b.sim.Faults(); got.ErrorRate != 0 {
		t.Errorf("got faults %+v after reset, want none", got)
	}
	if _, err := b.pi.New(charge("pm_card_visa", "k")); err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(b.ts.URL + "/_sim/ledger?idempotency_key=k")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var ledger struct {
		Object           string            `json:"object"`
		Account          string            `json:"account"`
		Data             []sim.LedgerEntry `json:"data"`
		TotalEffects     int               `json:"total_effects"`
		MaxEffectsPerKey int               `json:"max_effects_per_key"`
	}
	if err := jsonDecode(res.Body, &ledger); err != nil {
		t.Fatal(err)
	}
	if ledger.Object != "list" || ledger.Account != "acct_simTest0001" || len(ledger.Data) != 1 ||
		ledger.TotalEffects != 1 || ledger.MaxEffectsPerKey != 1 || ledger.Data[0].Metadata["charge_id"] != "ch_k" {
		t.Errorf("got ledger %+v, want one entry for k with its effect", ledger)
	}
	if status, _ := post("/_sim/nothing", ``); status != http.StatusNotFound {
		t.Errorf("got %d for an unknown control, want 404", status)
	}
}

// warmUp makes hc hold an idle keep-alive connection to the simulator.
func warmUp(t *testing.T, b *bundle, hc *http.Client) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.ts.URL+"/v1/account", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
}
