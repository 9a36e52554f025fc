package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/idempotency"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/report"
	"github.com/paygate/paygate/store"
)

// reportFixture writes card attempts and reattempt decisions at chosen instants.
type reportFixture struct {
	t  *testing.T
	tx pgx.Tx
	db *store.DB
}

// attempt creates a charge on the card through BeginCharge, then moves its card attempt to
// at with the outcome given, and returns the charge id.
func (f reportFixture) attempt(merchant, account, fingerprint, network string, at time.Time, o decline.Outcome, cl decline.Class, cat decline.Category) string {
	f.t.Helper()
	c := newCharge(merchant, "")
	c.ProcessorAccount = account
	_, err := charge.Begin(context.Background(), f.db, charge.BeginParams{MerchantID: merchant, Key: "k_" + c.ID,
		Fingerprint: idempotency.Fingerprint{7}, LockFor: time.Minute, New: c,
		Card: &charge.Card{Fingerprint: fingerprint, Network: network, ExpMonth: 12, ExpYear: 2034}})
	if err != nil {
		f.t.Fatalf("BeginCharge: %v", err)
	}
	_, err = f.tx.Exec(context.Background(), `UPDATE card_attempts SET at = $2, outcome = $3, class = NULLIF($4, ''),
		category = NULLIF($5, 0) WHERE charge_id = $1`, c.ID, at, string(o), string(cl), int(cat))
	if err != nil {
		f.t.Fatal(err)
	}
	return c.ID
}

// decision appends a reattempt decision on the card.
func (f reportFixture) decision(merchant, account, fingerprint, network string, at time.Time, allowed bool) {
	f.t.Helper()
	_, err := f.tx.Exec(context.Background(), `INSERT INTO reattempt_decisions (at, processor_account, fingerprint,
		network, merchant_id, allowed, reason) VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN NOT $6 THEN 'never_reattempt' END)`,
		at, account, fingerprint, network, merchant, allowed)
	if err != nil {
		f.t.Fatal(err)
	}
}

func TestReattemptCards(t *testing.T) {
	t.Parallel()
	tx := dbtest.Tx(t)
	db := store.New(tx)
	f := reportFixture{t: t, tx: tx, db: db}
	for _, m := range []string{"m_a", "m_b", "m_c"} {
		newMerchant(t, db, m)
	}
	// The period is [end-10d, end]; its history is read from end-40d.
	end := time.Date(2040, 3, 1, 12, 0, 0, 0, time.UTC)
	from := end.Add(-10 * 24 * time.Hour)
	d := func(n int) time.Time { return end.Add(time.Duration(n) * 24 * time.Hour) }

	// A card two merchants share at acct_1.
	never := f.attempt("m_a", "acct_1", "fp_shared", "visa", d(-70), decline.Declined, decline.Never, 1) // first never: kept
	f.attempt("m_a", "acct_1", "fp_shared", "visa", d(-50), decline.Declined, decline.Funds, 2)          // older: dropped
	ok := f.attempt("m_a", "acct_1", "fp_shared", "visa", d(-45), decline.Approved, "", 0)               // last authorization: kept
	f.attempt("m_a", "acct_1", "fp_shared", "visa", d(-42), decline.Blocked, decline.Generic, 4)         // a block: dropped
	look := f.attempt("m_b", "acct_1", "fp_shared", "visa", d(-35), decline.Declined, decline.Funds, 2)  // lookback
	inA := f.attempt("m_a", "acct_1", "fp_shared", "visa", d(-5), decline.Declined, decline.Funds, 2)
	inB := f.attempt("m_b", "acct_1", "fp_shared", "visa", d(-2), decline.Pending, "", 0)
	f.attempt("m_a", "acct_1", "fp_shared", "visa", d(1), decline.Declined, decline.Funds, 2) // after the period
	f.decision("m_b", "acct_1", "fp_shared", "visa", d(-3), false)
	f.decision("m_a", "acct_1", "fp_shared", "visa", d(-20), false) // before the period
	f.decision("m_a", "acct_1", "fp_shared", "visa", d(-5), true)
	// The same fingerprint at another processor account is another card.
	other := f.attempt("m_a", "acct_2", "fp_shared", "visa", d(-1), decline.Approved, "", 0)
	// A card only m_b touched.
	onlyB := f.attempt("m_b", "acct_1", "fp_b_only", "visa", d(-1), decline.Declined, decline.Generic, 4)
	// A card with a refusal only: the gateway refused every attempt of the period.
	f.decision("m_a", "acct_1", "fp_refused", "mastercard", d(-4), false)
	// Cards without activity in the period.
	f.attempt("m_a", "acct_1", "fp_late", "visa", d(2), decline.Declined, decline.Funds, 2)
	f.attempt("m_a", "acct_1", "fp_lookback", "visa", d(-20), decline.Declined, decline.Funds, 2)

	type card struct {
		key       string
		network   decline.Network
		merchants []string
		refused   int
		charges   []string
	}
	shared := card{"acct_1/fp_shared", decline.Visa, []string{"m_a", "m_b"}, 1, []string{never, ok, look, inA, inB}}
	sharedElsewhere := card{"acct_2/fp_shared", decline.Visa, []string{"m_a"}, 0, []string{other}}
	bOnly := card{"acct_1/fp_b_only", decline.Visa, []string{"m_b"}, 0, []string{onlyB}}
	refusedOnly := card{"acct_1/fp_refused", decline.Mastercard, []string{"m_a"}, 1, nil}
	tests := []struct {
		merchant string
		want     []card
	}{
		{"", []card{bOnly, refusedOnly, shared, sharedElsewhere}},
		{"m_a", []card{refusedOnly, shared, sharedElsewhere}},
		{"m_b", []card{bOnly, shared}},
		{"m_c", nil},
	}
	for _, tt := range tests {
		got, err := db.ReattemptCards(context.Background(), report.Query{From: from, To: end, Merchant: tt.merchant})
		if err != nil {
			t.Fatalf("merchant %q: %v", tt.merchant, err)
		}
		if len(got) != len(tt.want) {
			t.Fatalf("merchant %q: got %d cards %+v, want %d", tt.merchant, len(got), got, len(tt.want))
		}
		for i, c := range got {
			w := tt.want[i]
			var charges []string
			for _, a := range c.Attempts {
				charges = append(charges, a.Charge)
			}
			if k := c.ProcessorAccount + "/" + c.Fingerprint; k != w.key || c.Network != w.network ||
				!slices.Equal(c.Merchants, w.merchants) || c.Refused != w.refused || !slices.Equal(charges, w.charges) {
				t.Errorf("merchant %q card %d: got %s %s %v refused %d %v,\nwant %s %s %v refused %d %v", tt.merchant, i,
					k, c.Network, c.Merchants, c.Refused, charges, w.key, w.network, w.merchants, w.refused, w.charges)
			}
		}
	}

	// The attempts carry what the audit needs.
	got, err := db.ReattemptCards(context.Background(), report.Query{From: from, To: end, Merchant: "m_a"})
	if err != nil {
		t.Fatal(err)
	}
	first := got[1].Attempts[0]
	if first.Charge != never || first.Outcome != decline.Declined || first.Class != decline.Never ||
		first.Category != decline.CategoryNeverApprove || first.Network != decline.Visa || !first.At.Equal(d(-70)) ||
		first.At.Location() != time.UTC || first.Chain != never || first.Expiry != (decline.Expiry{Year: 2034, Month: 12}) {
		t.Errorf("first attempt: got %+v, want the never-class decline of day -70", first)
	}
	if p := got[1].Attempts[4]; p.Outcome != decline.Pending || p.Class != "" || p.Category != decline.CategoryNone {
		t.Errorf("pending attempt: got %+v", p)
	}
}

// TestReattemptCardsKnownAt: the report reads when each attempt's outcome became known, so
// that an attempt sent while a never-class decline was still pending is told apart from one
// sent after the decline was known.
func TestReattemptCardsKnownAt(t *testing.T) {
	t.Parallel()
	tx := dbtest.Tx(t)
	db := store.New(tx)
	f := reportFixture{t: t, tx: tx, db: db}
	newMerchant(t, db, "m_k")
	end := time.Date(2040, 3, 1, 12, 0, 0, 0, time.UTC)
	lost := f.attempt("m_k", "acct_1", "fp_known", "visa", end.Add(-3*time.Hour), decline.Declined, decline.Never, 1)
	found := end.Add(-2 * time.Hour) // reconciliation found the decline an hour after it was sent
	if _, err := tx.Exec(context.Background(), `UPDATE card_attempts SET settled_at = $2 WHERE charge_id = $1`, lost, found); err != nil {
		t.Fatal(err)
	}
	inHindsight := f.attempt("m_k", "acct_1", "fp_known", "visa", end.Add(-150*time.Minute), decline.Approved, "", 0)
	violation := f.attempt("m_k", "acct_1", "fp_known", "visa", end.Add(-time.Hour), decline.Approved, "", 0)

	got, err := db.ReattemptCards(context.Background(), report.Query{From: end.Add(-24 * time.Hour), To: end})
	if err != nil {
		t.Fatal(err)
	}
	rows := report.Build(got, report.Query{From: end.Add(-24 * time.Hour), To: end}, decline.Caps{})
	if len(rows) != 1 {
		t.Fatalf("rows: %d, want 1", len(rows))
	}
	r := rows[0]
	if r.Violations != 1 || r.ViolationsDetail[0].Charge != violation ||
		r.ViolationsInHindsight != 1 || r.ViolationsInHindsightDetail[0].Charge != inHindsight {
		t.Fatalf("violations %v, in hindsight %v; want %s a violation and %s in hindsight",
			r.ViolationsDetail, r.ViolationsInHindsightDetail, violation, inHindsight)
	}
}
