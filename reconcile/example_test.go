package reconcile_test

import (
	"fmt"
	"time"

	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/reconcile"
)

func ExampleParseSchedule() {
	s, err := reconcile.ParseSchedule("30s,5m,1h,1d*7")
	if err != nil {
		panic(err)
	}
	sent := time.Date(2031, 1, 1, 12, 0, 0, 0, time.UTC)
	next, _ := s.Next(sent, sent.Add(2*time.Hour))
	fmt.Println(len(s), s.Window(), next.Sub(sent))
	// Output: 10 168h0m0s 24h0m0s
}

func ExampleCanReplay() {
	sent := time.Date(2031, 1, 1, 12, 0, 0, 0, time.UTC)
	c := reconcile.Charge{ID: "ch_1", Account: "acct_1", FirstSentAt: sent, Written: true}
	for _, after := range []time.Duration{time.Minute, 23 * time.Hour} {
		v := reconcile.CanReplay(c, "acct_1", sent.Add(after))
		fmt.Println(after, v.Allowed, v.Reason)
	}
	c.Written = false
	fmt.Println(reconcile.CanReplay(c, "acct_1", sent.Add(time.Minute)).Reason)
	// Output:
	// 1m0s true inside_key_window
	// 23h0m0s false key_closed
	// never_written
}

func ExampleDecide() {
	sent := time.Date(2031, 1, 1, 12, 0, 0, 0, time.UTC)
	c := reconcile.Charge{ID: "ch_1", Amount: 1999, Currency: "usd", PaymentMethod: "pm_card_visa",
		Account: "acct_1", FirstSentAt: sent, Written: true}
	from, to := reconcile.Policy{}.ListWindow(c)
	ev := reconcile.Evidence{At: sent.Add(30 * time.Second), Account: "acct_1",
		List: &reconcile.Listing{From: from, To: to, Pages: 1, Complete: true, Intents: []processor.Intent{{
			ID: "pi_1", Status: "requires_payment_method", Amount: 1999, Currency: "usd", PaymentMethod: "pm_card_visa",
			ChargeID: "ch_1", Decline: &processor.Decline{Code: "card_declined", DeclineCode: "insufficient_funds"},
		}}}}
	d := reconcile.Decide(c, ev, reconcile.Policy{})
	fmt.Println(d.Kind, d.Outcome, d.Path, d.PaymentIntent, d.Decline.DeclineCode)
	// Output: resolve declined list pi_1 insufficient_funds
}
