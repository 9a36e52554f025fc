package charge_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/idempotency"
	"github.com/paygate/paygate/processor"
)

// A declined charge is reattempted into one payment at most: once a reattempt of its chain
// succeeded (or may have: pending, processing), another reattempt is refused with the live
// one's id, whatever its key or card — the order is paid.
func TestOneLiveReattemptPerChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, m := serviceMerchant(t)
	fp := "fp_" + charge.NewID()[17:]
	// The same card with another expiry for each payment method: new card data clears the
	// fix-data decline at once.
	expiry := map[string]int64{"pm_card_visa": 2034, "pm_new": 2035, "pm_newer": 2036}
	cards := fnCards{card: func(_ context.Context, pm string) (processor.Card, error) {
		return processor.Card{Fingerprint: fp, Brand: "visa", Network: "visa", ExpMonth: 12, ExpYear: expiry[pm]}, nil
	}}
	svc := charge.NewService(charge.ServiceConfig{Store: db, Render: renderJSON, Cards: cards,
		Runner: fnRunner{run: func(_ context.Context, c *charge.Charge) charge.Outcome {
			at := []charge.Attempt{{N: 1, StartedAt: time.Now(), HTTPStatus: 200}}
			if c.PaymentMethod == "pm_card_visa" {
				return charge.Outcome{Status: charge.StatusDeclined, Evidence: &processor.Decline{DeclineCode: "expired_card"}, Attempts: at}
			}
			return charge.Outcome{Status: charge.StatusSucceeded, ProcessorRef: "pi_" + c.ID, Attempts: at}
		}}})
	idOf := func(resp charge.Response) string {
		t.Helper()
		var b struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal(resp.Body, &b); err != nil {
			t.Fatal(err)
		}
		return b.ID
	}
	declined, err := svc.Create(ctx, charge.CreateParams{MerchantID: m, Key: "order", Fingerprint: idempotency.Fingerprint{60},
		Request: visaRequest, Timeout: 2 * time.Second})
	if err != nil || declined.Status != 402 {
		t.Fatalf("first charge: %d %s, %v; want declined", declined.Status, declined.Body, err)
	}
	reattempt := func(key, pm string) (charge.Response, error) {
		return svc.Reattempt(ctx, charge.ReattemptParams{MerchantID: m, Key: key, Fingerprint: idempotency.Fingerprint{61},
			ChargeID: idOf(declined), PaymentMethod: pm, Timeout: 2 * time.Second})
	}
	first, err := reattempt("re-1", "pm_new")
	if err != nil || first.Status != 200 {
		t.Fatalf("first reattempt: %d %s, %v; want succeeded", first.Status, first.Body, err)
	}
	// Another card, or the original card (which the network rules alone would refuse as
	// fix data first): refused because the order is paid, naming the live reattempt.
	for _, pm := range []string{"pm_newer", ""} {
		_, err = reattempt("re-"+pm, pm)
		var live *charge.DuplicateReattemptError
		if !errors.As(err, &live) || live.ChargeID != idOf(first) {
			t.Fatalf("reattempt with %q after a live one: %v, want refused naming %s", pm, err, idOf(first))
		}
	}
	// The first reattempt's own key still replays its answer.
	again, err := reattempt("re-1", "pm_new")
	if err != nil || again.Status != 200 || !again.Replayed {
		t.Fatalf("the first reattempt's key again: %d %s, %v; want its answer replayed", again.Status, again.Body, err)
	}
}
