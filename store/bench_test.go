package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/idempotency"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

// BenchmarkChargePhases runs a charge's two phases through the store (the intent, then an
// approval as the outcome), 8 at a time over 500 cards: on cards whose history holds only
// approvals (one round trip for the intent), and on cards with a decline in their history
// (the intent decided over the history read under the card's lock, in two).
func BenchmarkChargePhases(b *testing.B) {
	for _, withDecline := range []bool{false, true} {
		name := "approvals-only"
		if withDecline {
			name = "with-a-decline"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			db := store.New(dbtest.Pool(b))
			merchant := "m_bench_" + charge.NewID()
			newMerchant(b, db, merchant)
			var n atomic.Int64
			phases := func(b *testing.B, card int, outcome decline.Outcome) {
				i := n.Add(1)
				c := &charge.Card{Fingerprint: fmt.Sprintf("fp_%s_%d", merchant, card), Network: "visa", ExpMonth: 12, ExpYear: 2034}
				bg, err := charge.Begin(ctx, db, charge.BeginParams{MerchantID: merchant, Key: fmt.Sprintf("k%d", i),
					Fingerprint: idempotency.Fingerprint{1}, LockFor: time.Minute, New: newCharge(merchant, ""), Card: c})
				if err != nil || !bg.Created {
					b.Fatalf("begin: %+v, %v", bg, err)
				}
				ch := *bg.Charge
				ch.Status = charge.StatusSucceeded
				if outcome != decline.Approved {
					ch.Status = charge.StatusDeclined
				}
				if err := db.FinishCharge(ctx, charge.FinishParams{MerchantID: merchant, Key: ch.IdempotencyKey, Charge: &ch,
					ResponseStatus: 201, ResponseBody: []byte(`{}`), Card: &charge.CardOutcome{Outcome: outcome}}); err != nil {
					b.Fatal(err)
				}
			}
			const cards = 500
			if withDecline {
				// A decline, and an approval that ends its run: no rule refuses the card.
				for card := range cards {
					phases(b, card, decline.Declined)
					phases(b, card, decline.Approved)
				}
			}
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					phases(b, int(n.Load()%cards), decline.Approved)
				}
			})
		})
	}
}
