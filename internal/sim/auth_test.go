package sim_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/account"

	"github.com/paygate/paygate/internal/sim"
)

func TestAuthentication(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		secret        string
		authorization string
		status        int
	}{
		{"any test key", "", "Bearer sk_test_abc123", 200},
		{"restricted test key", "", "Bearer rk_test_abc123", 200},
		{"basic auth", "", "Basic " + base64.StdEncoding.EncodeToString([]byte("sk_test_abc123:")), 200},
		{"missing", "", "", 401},
		{"empty bearer", "", "Bearer ", 401},
		{"live key", "", "Bearer sk_live_abc123", 401},
		{"publishable key", "", "Bearer pk_test_abc123", 401},
		{"malformed", "", "Bearer sk_test_", 401},
		{"other scheme", "", "Token sk_test_abc123", 401},
		{"configured key", "sk_test_only", "Bearer sk_test_only", 200},
		{"other key than configured", "sk_test_only", "Bearer sk_test_abc123", 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, withConfig(func(c *sim.Config) { c.SecretKey = tc.secret }))
			status, h, body := b.do(t, http.MethodGet, "/v1/account", nil, map[string]string{"Authorization": tc.authorization})
			if status != tc.status {
				t.Fatalf("got %d %s, want %d", status, body, tc.status)
			}
			if status == 401 {
				if !strings.Contains(string(body), `"type": "invalid_request_error"`) || h.Get("Www-Authenticate") == "" {
					t.Errorf("got %s headers %v, want Stripe's 401 shape", body, h)
				}
				if strings.Contains(string(body), "abc123") {
					t.Errorf("got the key echoed in %s, want it redacted", body)
				}
			}
		})
	}
}

func TestAuthenticationWithStripeGo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := account.Client{B: b.backend, Key: "sk_live_whatever"}
	_, err := c.Get()
	se := stripeError(t, err)
	if se.HTTPStatusCode != 401 || se.Type != stripe.ErrorTypeInvalidRequest {
		t.Errorf("got %d %s, want 401 invalid_request_error", se.HTTPStatusCode, se.Type)
	}
	p := charge("pm_card_visa", "k")
	p.SetStripeAccount("acct_someoneElse")
	_, err = b.pi.New(p)
	if se := stripeError(t, err); se.HTTPStatusCode != 403 || se.Code != "account_invalid" {
		t.Errorf("got %d %s, want 403 account_invalid", se.HTTPStatusCode, se.Code)
	}
}

func TestAccount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	got, err := b.acct.Get()
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "acct_simTest0001" || got.Object != "account" || !got.ChargesEnabled || got.ID != b.sim.AccountID() {
		t.Errorf("got %s %s charges_enabled=%v, want acct_simTest0001 account true", got.ID, got.Object, got.ChargesEnabled)
	}
	if _, err := b.acct.GetByID("acct_simTest0001", nil); err != nil {
		t.Errorf("got %v for the own account by id, want it", err)
	}
	if _, err := b.acct.GetByID("acct_other", nil); stripeError(t, err).HTTPStatusCode != 404 {
		t.Errorf("got %v for another account, want 404", err)
	}
	generated := sim.New(sim.Config{})
	if id := generated.AccountID(); !strings.HasPrefix(id, "acct_sim") || len(id) != len("acct_sim")+12 {
		t.Errorf("got generated account id %q, want acct_sim and 12 characters", id)
	}
}
