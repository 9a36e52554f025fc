package decline_test

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/paygate/paygate/decline"
)

func ExampleClassify() {
	// Stripe says only "generic_decline", but Mastercard's advice is 03:
	// do not try again.
	c := decline.Classify(decline.Evidence{
		DeclineCode:       "generic_decline",
		NetworkAdviceCode: "03",
		Network:           decline.ParseNetwork("mastercard"),
	})
	fmt.Println(c.Class, c.Source, c.Code)

	// insufficient_funds on a Visa card is Visa category 2.
	c = decline.Classify(decline.Evidence{DeclineCode: "insufficient_funds", Network: decline.Visa})
	fmt.Println(c.Class, c.Category)

	// An unknown code is generic, Visa's default category 4.
	c = decline.Classify(decline.Evidence{NetworkDeclineCode: "Q7", Network: decline.Visa})
	fmt.Println(c.Class, c.Category, c.Code)
	// Output:
	// never network_advice_code 03
	// funds 2
	// generic 4 Q7
}

func ExampleClassify_processorRefusal() {
	// Stripe blocked the attempt itself after too many declines.
	c := decline.Classify(decline.Evidence{
		DeclineCode:   "generic_decline",
		NetworkStatus: "not_sent_to_network",
		OutcomeReason: "previously_declined_do_not_retry",
		Network:       decline.Visa,
	})
	fmt.Println(c.CapReached, c.Blocked)
	// Output:
	// true true
}

func ExampleMACDelay() {
	for _, code := range []string{"24", "25", "30", "02"} {
		m, _ := decline.ParseMAC(code)
		fmt.Println(code, decline.MACDelay(m))
	}
	// Output:
	// 24 1h0m0s
	// 25 24h0m0s
	// 30 240h0m0s
	// 02 0s
}

func ExampleNextSlot() {
	first := time.Date(2025, time.March, 1, 9, 0, 0, 0, time.UTC)
	for n := 0; ; n++ {
		slot, ok := decline.NextSlot(decline.Generic, first, n, time.Time{})
		if !ok {
			break
		}
		fmt.Println(n, slot.Format(time.DateTime))
	}
	// A Mastercard "retry after 4 days" (27) skips the funds slots on
	// days 1 and 3.
	slot, _ := decline.NextSlot(decline.Funds, first, 0, first.Add(decline.MACDelay(27)))
	fmt.Println("funds after MAC 27:", slot.Format(time.DateTime))
	// Output:
	// 0 2025-03-03 09:00:00
	// 1 2025-03-06 09:00:00
	// 2 2025-03-10 09:00:00
	// 3 2025-03-15 09:00:00
	// funds after MAC 27: 2025-03-06 09:00:00
}

func ExampleCheck() {
	declinedAt := time.Date(2025, time.March, 1, 9, 0, 0, 0, time.UTC)
	history := decline.History{{
		Charge: "ch_1", Chain: "ch_1", At: declinedAt,
		Outcome: decline.Declined, Class: decline.Funds, Network: decline.Visa,
	}}

	// The 402 answer's reattempt block, right after the decline.
	v := decline.Check(history, decline.Next{At: declinedAt, Network: decline.Visa, Chain: "ch_1"}, decline.DefaultCaps())
	_ = json.NewEncoder(os.Stdout).Encode(v)

	// A day later the first funds slot is open.
	v = decline.Check(history, decline.Next{At: declinedAt.Add(24 * time.Hour), Network: decline.Visa, Chain: "ch_1"}, decline.DefaultCaps())
	fmt.Println(v.Allowed, v.RemainingInWindow)
	// Output:
	// {"allowed":false,"reason":"too_early","not_before":"2025-03-02T09:00:00Z","remaining_in_window":15}
	// true 15
}

// A card error for a wrong CVC asks for the data to be entered again: the same payment
// method is refused, a new one for the same card (same fingerprint, same expiry) is not.
func ExampleCheck_dataEnteredAgain() {
	at := time.Date(2025, time.March, 1, 9, 0, 0, 0, time.UTC)
	cl := decline.Classify(decline.Evidence{Code: "incorrect_cvc", Network: decline.Visa})
	expiry := decline.Expiry{Year: 2027, Month: 3}
	history := decline.History{{
		Charge: "ch_1", Chain: "ch_1", At: at, Outcome: decline.Declined, Class: cl.Class, Hold: cl.Hold,
		Network: decline.Visa, PaymentMethod: "pm_1", Expiry: expiry, Currency: "usd",
	}}
	fmt.Println(cl.Class, cl.Hold, cl.Category)
	for _, pm := range []string{"pm_1", "pm_2"} {
		v := decline.Check(history, decline.Next{At: at.Add(time.Minute), Network: decline.Visa,
			PaymentMethod: pm, Expiry: expiry, Currency: "usd"}, decline.DefaultCaps())
		fmt.Println(pm, v.Allowed, v.Reason)
	}
	// Output:
	// fix_data same_payment_method 3
	// pm_1 false fix_data_first
	// pm_2 true
}

func ExampleAudit() {
	at := time.Date(2025, time.March, 1, 9, 0, 0, 0, time.UTC)
	history := decline.History{
		{Charge: "ch_1", At: at, Outcome: decline.Declined, Class: decline.Never, Network: decline.Visa},
		{Charge: "ch_2", At: at.Add(time.Hour), Outcome: decline.Declined, Class: decline.Never, Network: decline.Visa},
	}
	f := decline.Audit(history, decline.DefaultCaps())
	for _, v := range f.Violations {
		fmt.Println(v.Charge, v.Rule)
	}
	// Output:
	// ch_2 after_never
}
