package charge_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/apikey"
	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

// The tests of this package that need a database run the charge engine on the store of
// record, with the processor replaced by scripted runs: what a run answers is the test's,
// what the engine stores is the store's.

func TestMain(m *testing.M) { dbtest.Main(m) }

// newMerchant creates merchant id, with a checkout key.
func newMerchant(t testing.TB, db *store.DB, id string) {
	t.Helper()
	k, _ := apikey.Generate()
	if err := db.CreateKey(context.Background(), id, apikey.RoleCheckout, k); err != nil {
		t.Fatal(err)
	}
}

// newCharge is a new charge of merchant at acct_1, with reference ref.
func newCharge(merchant, ref string) charge.Charge {
	id := charge.NewID()
	return charge.Charge{ID: id, MerchantID: merchant, Amount: 1000, Currency: "usd", PaymentMethod: "pm_card_visa",
		Reference: ref, Initiator: charge.InitiatorCustomer, ReattemptMode: charge.ReattemptManual,
		ProcessorKey: charge.ProcessorKey(id), ProcessorAccount: "acct_1"}
}

var testCard = &charge.Card{Fingerprint: "fp_test", Network: "visa", ExpMonth: 12, ExpYear: 2034}

// lockExpires waits until the lock of merchant's key has expired on the database's clock: a
// request that died holding it frees it then.
func lockExpires(t *testing.T, merchant, key string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		var expired bool
		if err := dbtest.Pool(t).QueryRow(context.Background(), `SELECT COALESCE(locked_until < clock_timestamp(), true)
			FROM idempotency_keys WHERE merchant_id = $1 AND key = $2`, merchant, key).Scan(&expired); err != nil {
			t.Fatal(err)
		}
		if expired {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lock of %s's key %s has not expired", merchant, key)
		}
		<-tick.C
	}
}

// stuckMu serializes the tests that leave charges mid-flight with their key's lock expired:
// a completer pass claims every such charge of the database, whichever test's it is.
var stuckMu sync.Mutex

// leavesStuckCharges holds stuckMu until the test ends.
func leavesStuckCharges(t *testing.T) {
	t.Helper()
	stuckMu.Lock()
	t.Cleanup(stuckMu.Unlock)
}

// The statuses the database's invariant check counts as live (dbtest.Invariants, run after
// every package's tests) are the ones charge.Status.Live says are.
func TestLiveStatusesAgreeWithTheInvariantCheck(t *testing.T) {
	t.Parallel()
	for _, s := range []charge.Status{charge.StatusProcessing, charge.StatusSucceeded, charge.StatusDeclined,
		charge.StatusPending, charge.StatusFailed} {
		if got, want := slices.Contains(dbtest.LiveStatuses, string(s)), s.Live(); got != want {
			t.Errorf("%s: dbtest counts it live %t, Status.Live says %t", s, got, want)
		}
	}
}
