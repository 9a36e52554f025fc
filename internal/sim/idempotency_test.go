package sim_test

import (
	"bytes"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"

	"github.com/paygate/paygate/internal/sim"
)

func TestIdempotentReplay(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		pm     string
		status int
	}{
		{"approval", "pm_card_visa", http.StatusOK},
		{"decline", "pm_card_visa_chargeDeclinedInsufficientFunds", http.StatusPaymentRequired},
		{"unknown payment method", "pm_unknown", http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			first, err1 := b.pi.New(charge(tc.pm, "same-key"))
			second, err2 := b.pi.New(charge(tc.pm, "same-key"))
			firstResp, secondResp := lastResponse(t, first, err1), lastResponse(t, second, err2)
			if firstResp.StatusCode != tc.status || secondResp.StatusCode != tc.status {
				t.Fatalf("got statuses %d, %d, want %d twice", firstResp.StatusCode, secondResp.StatusCode, tc.status)
			}
			if !bytes.Equal(firstResp.RawJSON, secondResp.RawJSON) {
				t.Errorf("got a replay body different from the first:\n%s\nwant\n%s", secondResp.RawJSON, firstResp.RawJSON)
			}
			if got := firstResp.Header.Get("Idempotent-Replayed"); got != "" {
				t.Errorf("got Idempotent-Replayed %q on the first answer, want none", got)
			}
			if got := secondResp.Header.Get("Idempotent-Replayed"); got != "true" {
				t.Errorf("got Idempotent-Replayed %q on the replay, want true", got)
			}
			if got, want := secondResp.Header.Get("Original-Request"), firstResp.RequestID; got != want {
				t.Errorf("got Original-Request %q, want %q", got, want)
			}
			if secondResp.RequestID == firstResp.RequestID {
				t.Errorf("got the same Request-Id %q twice, want a new one per request", secondResp.RequestID)
			}
			e := b.ledgerEntry(t, "same-key")
			wantEffects := 1
			if tc.status == http.StatusBadRequest {
				wantEffects = 0
			}
			if e.Requests != 2 || e.Executions != 1 || e.Replays != 1 || e.Effects != wantEffects {
				t.Errorf("got ledger %+v, want 2 requests, 1 execution, 1 replay, %d effects", e, wantEffects)
			}
		})
	}
}

// lastResponse returns the APIResponse of a stripe-go result or error.
func lastResponse(t *testing.T, pi *stripe.PaymentIntent, err error) *stripe.APIResponse {
	t.Helper()
	if err != nil {
		return stripeError(t, err).LastResponse
	}
	return pi.LastResponse
}

func TestIdempotencyMismatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.pi.New(charge("pm_card_visa", "k")); err != nil {
		t.Fatal(err)
	}
	p := charge("pm_card_visa", "k")
	p.Amount = stripe.Int64(2000)
	_, err := b.pi.New(p)
	se := stripeError(t, err)
	if se.HTTPStatusCode != http.StatusBadRequest || se.Type != stripe.ErrorTypeIdempotency {
		t.Errorf("got %d %s, want 400 idempotency_error", se.HTTPStatusCode, se.Type)
	}
	if _, ok := se.Err.(*stripe.IdempotencyError); !ok {
		t.Errorf("got typed error %T, want *stripe.IdempotencyError", se.Err)
	}
	if e := b.ledgerEntry(t, "k"); e.Effects != 1 || e.Requests != 2 {
		t.Errorf("got ledger %+v, want 1 effect of 2 requests", e)
	}
}

func TestIdempotencyKeyInUse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.script(t, `[{"processing_ms": 300}]`)
	var wg sync.WaitGroup
	wg.Add(1)
	var firstErr error
	go func() {
		defer wg.Done()
		_, firstErr = b.pi.New(charge("pm_card_visa", "k"))
	}()
	waitFor(t, func() bool { return b.sim.Stats().IdempotencyKeys == 1 })
	_, err := b.pi.New(charge("pm_card_visa", "k"))
	se := stripeError(t, err)
	if se.HTTPStatusCode != http.StatusConflict || se.Code != stripe.ErrorCodeIdempotencyKeyInUse ||
		se.Type != stripe.ErrorTypeInvalidRequest {
		t.Errorf("got %d %s %s, want 409 idempotency_key_in_use invalid_request_error", se.HTTPStatusCode, se.Code, se.Type)
	}
	if got := se.LastResponse.Header.Get("Stripe-Should-Retry"); got != "true" {
		t.Errorf("got Stripe-Should-Retry %q, want true", got)
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("got first request error %v, want success", firstErr)
	}
	// The 409 was not stored: the key now replays the first answer.
	pi, err := b.pi.New(charge("pm_card_visa", "k"))
	if err != nil || pi.LastResponse.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("got %v replayed %q, want the stored success", err, pi.LastResponse.Header.Get("Idempotent-Replayed"))
	}
	if e := b.ledgerEntry(t, "k"); e.Effects != 1 || e.Executions != 1 || e.Requests != 3 {
		t.Errorf("got ledger %+v, want 1 effect, 1 execution, 3 requests", e)
	}
}

func TestValidationErrorIsNotStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := charge("pm_card_visa", "k")
	p.Amount = nil
	_, err := b.pi.New(p)
	if se := stripeError(t, err); se.Code != stripe.ErrorCodeParameterMissing {
		t.Fatalf("got %s, want parameter_missing", se.Code)
	}
	pi, err := b.pi.New(charge("pm_card_visa", "k"))
	if err != nil {
		t.Fatalf("got %v, want the corrected request executed under the same key", err)
	}
	if got := pi.LastResponse.Header.Get("Idempotent-Replayed"); got != "" {
		t.Errorf("got Idempotent-Replayed %q, want a first execution", got)
	}
}

func TestKeysExpire(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first, err := b.pi.New(charge("pm_card_visa", "k"))
	if err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(sim.DefaultKeyTTL - time.Second)
	again, err := b.pi.New(charge("pm_card_visa", "k"))
	if err != nil || again.ID != first.ID {
		t.Fatalf("got %v %q within the TTL, want the replay of %q", err, again.ID, first.ID)
	}
	if got := b.sim.Stats().IdempotencyKeys; got != 1 {
		t.Errorf("got %d keys within the TTL, want 1", got)
	}
	b.clock.Advance(time.Second)
	if got := b.sim.Stats().IdempotencyKeys; got != 0 {
		t.Errorf("got %d keys after the TTL, want 0", got)
	}
	later, err := b.pi.New(charge("pm_card_visa", "k"))
	if err != nil {
		t.Fatal(err)
	}
	if later.ID == first.ID || later.LastResponse.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("got %q replayed %q after the TTL, want a new execution",
			later.ID, later.LastResponse.Header.Get("Idempotent-Replayed"))
	}
	// The ledger outlives the key and shows the second effect.
	if e := b.ledgerEntry(t, "k"); e.Effects != 2 {
		t.Errorf("got %d effects, want 2 (one per key lifetime)", e.Effects)
	}
}

func TestCapsBoundMemory(t *testing.T) {
	t.Parallel()
	b := setup(t, withConfig(func(c *sim.Config) {
		c.MaxPaymentIntents = 5
		c.MaxIdempotencyKeys = 4
		c.MaxLedgerEntries = 3
	}))
	var ids []string
	for i := range 10 {
		pi, err := b.pi.New(charge("pm_card_visa", "key-"+string(rune('a'+i))))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, pi.ID)
	}
	st := b.sim.Stats()
	if st.PaymentIntents != 5 || st.IdempotencyKeys != 4 || st.LedgerEntries != 3 {
		t.Errorf("got %+v, want 5 intents, 4 keys, 3 ledger entries", st)
	}
	if _, err := b.pi.Get(ids[0], nil); err == nil {
		t.Errorf("got the oldest intent %s, want it evicted", ids[0])
	}
	if _, err := b.pi.Get(ids[9], nil); err != nil {
		t.Errorf("got %v for the newest intent, want it kept", err)
	}
}

func TestRequestsWithoutKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	form := url.Values{"amount": {"1999"}, "currency": {"usd"}, "payment_method": {"pm_card_visa"}, "confirm": {"true"}}
	for range 2 {
		status, h, _ := b.do(t, http.MethodPost, "/v1/payment_intents", form, nil)
		if status != http.StatusOK || h.Get("Idempotency-Key") != "" || h.Get("Idempotent-Replayed") != "" {
			t.Errorf("got %d key %q replayed %q, want 200 without idempotency headers",
				status, h.Get("Idempotency-Key"), h.Get("Idempotent-Replayed"))
		}
	}
	if got := b.sim.Stats(); got.PaymentIntents != 2 || got.IdempotencyKeys != 0 {
		t.Errorf("got %+v, want 2 intents and no keys", got)
	}
	if got := b.sim.Ledger(); len(got) != 2 || got[0].IdempotencyKey != "" || got[0].Effects != 1 {
		t.Errorf("got ledger %+v, want one keyless entry per request", got)
	}
}

// waitFor polls cond for up to five seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
