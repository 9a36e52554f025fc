package sim_test

import (
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/paymentintent"

	"github.com/paygate/paygate/internal/sim"
)

// exampleClient returns a stripe-go PaymentIntent client for the simulator at
// url, with stripe-go's own retries off.
func exampleClient(url string) paymentintent.Client {
	backend := stripe.GetBackendWithConfig(stripe.APIBackend, &stripe.BackendConfig{
		URL:               stripe.String(url),
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
	return paymentintent.Client{B: backend, Key: "sk_test_example"}
}

func exampleParams(pm, key string) *stripe.PaymentIntentParams {
	return &stripe.PaymentIntentParams{
		Params:             stripe.Params{IdempotencyKey: stripe.String(key)},
		Amount:             stripe.Int64(1999),
		Currency:           stripe.String("usd"),
		PaymentMethod:      stripe.String(pm),
		PaymentMethodTypes: stripe.StringSlice([]string{"card"}),
		Confirm:            stripe.Bool(true),
	}
}

// The payment method decides the outcome: Stripe's test ids, or the
// simulator's pm_sim_ ids for any decline code and network code.
func Example() {
	s := sim.New(sim.Config{})
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Close()
	intents := exampleClient(ts.URL)

	pi, err := intents.New(exampleParams("pm_card_visa", "order-1"))
	if err != nil {
		panic(err)
	}
	fmt.Println(pi.Status)

	_, err = intents.New(exampleParams("pm_sim_decline_insufficient_funds_visa_51", "order-2"))
	var se *stripe.Error
	if errors.As(err, &se) {
		fmt.Println(se.HTTPStatusCode, se.Type, se.DeclineCode, se.PaymentIntent.Status)
	}
	// Output:
	// succeeded
	// 402 card_error insufficient_funds requires_payment_method
}

// A scripted 503 is answered before execution and stored nowhere: the retry
// under the same idempotency key executes, once.
func ExampleServer_SetScript() {
	s := sim.New(sim.Config{})
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Close()
	intents := exampleClient(ts.URL)

	if err := s.SetScript([]sim.Step{{Status: 503}, {DropResponse: true}}); err != nil {
		panic(err)
	}
	for range 3 {
		pi, err := intents.New(exampleParams("pm_card_visa", "order-1"))
		var se *stripe.Error
		switch {
		case err == nil:
			fmt.Println(pi.Status, "replayed:", pi.LastResponse.Header.Get("Idempotent-Replayed"))
		case errors.As(err, &se):
			fmt.Println(se.HTTPStatusCode)
		default:
			fmt.Println("connection lost")
		}
	}
	e := s.Ledger()[0]
	fmt.Println(e.IdempotencyKey, "requests:", e.Requests, "effects:", e.Effects)
	// Output:
	// 503
	// connection lost
	// succeeded replayed: true
	// order-1 requests: 3 effects: 1
}
