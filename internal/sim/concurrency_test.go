package sim_test

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stripe/stripe-go/v76"
)

// TestConcurrentRequests races creates under shared and distinct keys with
// reads, searches and ledger reads; run it with -race.
func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const keys, perKey = 20, 5
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]map[string]bool{} // key -> PaymentIntent ids answered
	for k := range keys {
		for range perKey {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := fmt.Sprintf("order-%d", k)
				pm := "pm_card_visa"
				if k%3 == 0 {
					pm = "pm_sim_decline_insufficient_funds_visa_51"
				}
				pi, err := b.pi.New(charge(pm, key))
				var id string
				switch {
				case err == nil:
					id = pi.ID
				default:
					var se *stripe.Error
					if !errors.As(err, &se) {
						t.Errorf("got %v, want a *stripe.Error", err)
						return
					}
					switch se.HTTPStatusCode {
					case http.StatusConflict:
						return // the key was in use: nothing executed
					case http.StatusPaymentRequired:
						id = se.PaymentIntent.ID
					default:
						t.Errorf("got %d %s, want 200, 402 or 409", se.HTTPStatusCode, se.Msg)
						return
					}
				}
				mu.Lock()
				defer mu.Unlock()
				if seen[key] == nil {
					seen[key] = map[string]bool{}
				}
				seen[key][id] = true
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			it := b.pi.List(&stripe.PaymentIntentListParams{})
			for it.Next() {
			}
			p := &stripe.PaymentIntentSearchParams{}
			p.Query = "currency:'usd'"
			s := b.pi.Search(p)
			for s.Next() {
			}
			_ = b.sim.Ledger()
			_ = b.sim.Stats()
			if err := it.Err(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for key, ids := range seen {
		if len(ids) != 1 {
			t.Errorf("key %s: got PaymentIntents %v, want one", key, ids)
		}
	}
	total := 0
	for _, e := range b.sim.Ledger() {
		if e.Effects != 1 {
			t.Errorf("key %s: got %d effects, want 1", e.IdempotencyKey, e.Effects)
		}
		total += e.Effects
	}
	if got := b.sim.Stats().PaymentIntents; got != keys || total != keys {
		t.Errorf("got %d PaymentIntents and %d effects, want %d", got, total, keys)
	}
}
