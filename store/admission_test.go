package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/idempotency"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

// declines writes n declined attempts of the card, spread over the last days, as charges
// that reached their outcome.
func declines(t *testing.T, db *store.DB, merchant string, card *charge.Card, n int, class decline.Class) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		b := beginWith(t, db, merchant, fmt.Sprintf("old-%s-%d", card.Fingerprint, i), card)
		c := b.Charge
		c.Status = charge.StatusDeclined
		err := db.FinishCharge(ctx, charge.FinishParams{MerchantID: merchant, Key: b.Record.Key, Charge: c,
			ResponseStatus: 402, ResponseBody: []byte("{}"),
			Card: &charge.CardOutcome{Outcome: decline.Declined, Class: class}})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func beginWith(t *testing.T, db *store.DB, merchant, key string, card *charge.Card) charge.Plan {
	t.Helper()
	b, err := charge.Begin(context.Background(), db, charge.BeginParams{MerchantID: merchant, Key: key,
		Fingerprint: idempotency.Fingerprint{9}, LockFor: time.Minute, New: newCharge(merchant, ""), Card: card})
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	return b
}

func TestAdmissionNeverAndCap(t *testing.T) {
	t.Parallel()
	db := store.New(dbtest.Pool(t))
	newMerchant(t, db, "m_caps")

	never := &charge.Card{Fingerprint: "fp_never_" + charge.NewID(), Network: "visa"}
	declines(t, db, "m_caps", never, 1, decline.Never)
	if b := beginWith(t, db, "m_caps", "after-never", never); b.Refused == nil || b.Refused.Reason != decline.ReasonNeverReattempt || b.Created {
		t.Fatalf("after a never-class decline: got %+v, want refused never_reattempt", b.Refused)
	}

	capped := &charge.Card{Fingerprint: "fp_cap_" + charge.NewID(), Network: "visa"}
	declines(t, db, "m_caps", capped, 16, decline.Funds) // 15 reattempts after the first decline
	b := beginWith(t, db, "m_caps", "over-cap", capped)
	if b.Refused == nil || b.Refused.Reason != decline.ReasonNetworkCapReached {
		t.Fatalf("16th reattempt in 30 days: got %+v, want refused network_cap_reached", b.Refused)
	}
	// Every decision is on record, the refusals included.
	var refused int
	if err := dbtest.Pool(t).QueryRow(context.Background(),
		`SELECT count(*) FROM reattempt_decisions WHERE fingerprint = $1 AND NOT allowed`, capped.Fingerprint).Scan(&refused); err != nil {
		t.Fatal(err)
	}
	if refused != 1 {
		t.Fatalf("refused decisions on record: got %d, want 1", refused)
	}
	// The decision log is append-only in the database itself.
	if _, err := dbtest.Pool(t).Exec(context.Background(), `UPDATE reattempt_decisions SET allowed = true`); err == nil {
		t.Fatal("UPDATE of the decision log succeeded")
	}
	if _, err := dbtest.Pool(t).Exec(context.Background(), `DELETE FROM reattempt_decisions`); err == nil {
		t.Fatal("DELETE from the decision log succeeded")
	}
}

// TestAdmissionRaceForTheLastSlot: two charges racing for the last Visa slot of a card
// cannot both pass.
func TestAdmissionRaceForTheLastSlot(t *testing.T) {
	t.Parallel()
	db := store.New(dbtest.Pool(t))
	newMerchant(t, db, "m_race")
	card := &charge.Card{Fingerprint: "fp_race_" + charge.NewID(), Network: "visa"}
	declines(t, db, "m_race", card, 15, decline.Funds) // 14 reattempts: one slot left
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		admitted int
	)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := beginWith(t, db, "m_race", fmt.Sprintf("racer-%d", i), card)
			if b.Created {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if admitted != 1 {
		t.Fatalf("racers admitted for the last slot: got %d, want 1", admitted)
	}
}
