package processor

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"
	"go.uber.org/zap/zaptest"

	"github.com/paygate/paygate/retry"
)

// stripeMock starts stripe-mock, Stripe's published API as a server that validates every
// parameter, on loopback only, and returns its base URL.
func stripeMock(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("STRIPE_MOCK_BIN")
	if bin == "" {
		if p, err := exec.LookPath("stripe-mock"); err == nil {
			bin = p
		} else if gopath, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			bin = filepath.Join(string(trimNL(gopath)), "bin", "stripe-mock")
		}
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("stripe-mock not found (make test installs it): %v", err)
		}
		t.Skip("stripe-mock not installed: go install github.com/stripe/stripe-mock@v0.203.0")
	}
	httpPort, httpsPort := freePort(t), freePort(t)
	cmd := exec.Command(bin, "-http-addr", fmt.Sprintf("127.0.0.1:%d", httpPort), "-https-addr", fmt.Sprintf("127.0.0.1:%d", httpsPort))
	if err := cmd.Start(); err != nil {
		t.Fatalf("start stripe-mock: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", httpPort)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stripe-mock did not listen on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "http://" + addr
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestConformanceStripeMock sends the adapter's real requests to stripe-mock: every
// parameter paygate sends must be valid in Stripe's published API (stripe-mock answers 400
// to an unknown or malformed one).
func TestConformanceStripeMock(t *testing.T) {
	base := stripeMock(t)
	c, err := New(Config{SecretKey: "sk_test_123", BaseURL: base, Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	if acct, err := c.Account(ctx); err != nil || acct == "" {
		t.Fatalf("Account: got %q, %v", acct, err)
	}
	for _, p := range []PaymentParams{
		{Key: "pg_ch_conf1", ChargeID: "ch_conf1", Amount: 1000, Currency: "usd", PaymentMethod: "pm_card_visa"},
		{Key: "pg_ch_conf2", ChargeID: "ch_conf2", RootChargeID: "ch_conf1", Amount: 1000, Currency: "usd",
			PaymentMethod: "pm_card_visa", Customer: "cus_123", OffSession: true},
	} {
		a := c.CreatePayment(ctx, p)
		if a.Outcome.Class == retry.ClassTerminal || a.Outcome.Class == retry.ClassNotSent {
			t.Fatalf("CreatePayment(%+v): stripe-mock refused it: class %s status %d code %s err %v",
				p, a.Outcome.Class, a.Outcome.HTTPStatus, a.Outcome.ProcessorCode, a.Err)
		}
		if a.PaymentIntent == "" {
			t.Fatalf("CreatePayment: no PaymentIntent id in %+v", a)
		}
		// stripe-mock answers with its fixture, requires_payment_method with a
		// last_payment_error of type idempotency_error: no issuer declined anything.
		if a.Outcome.Class == retry.ClassDecline || a.Decline != nil {
			t.Fatalf("CreatePayment(%+v): got a decline %+v from stripe-mock's fixture, want none", p, a.Decline)
		}
	}
	if _, err := c.Card(ctx, "pm_card_visa"); err != nil {
		t.Fatalf("Card: %v", err)
	}

	// The check has teeth: stripe-mock refuses a parameter Stripe does not know.
	params := &stripe.PaymentIntentParams{Amount: stripe.Int64(100), Currency: stripe.String("usd")}
	params.Context = ctx
	params.IdempotencyKey = stripe.String("pg_ch_conf3")
	params.AddExtra("no_such_parameter", "1")
	if _, err := c.pi.New(params); err == nil {
		t.Fatal("stripe-mock accepted an unknown parameter: the conformance check proves nothing")
	}
}
