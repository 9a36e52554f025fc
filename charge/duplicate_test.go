package charge

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/paygate/paygate/decline"
)

// TestPossibleDuplicate: a decline the issuer gave as a duplicate of a recent transaction
// (Stripe, "Decline codes": duplicate_transaction, hold possible_duplicate) goes to review
// naming the merchant's earlier charges on the card of the same amount and currency that
// succeeded or are not settled, newest first; any other decline goes nowhere.
func TestPossibleDuplicate(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 12, 0, 0, 0, time.UTC)
	c := &Charge{ID: "ch_2", MerchantID: "m", Amount: 2500, Currency: "usd", ProcessorAccount: "acct_1",
		Card: &Card{Fingerprint: "fp_1"}}
	pay := func(id, merchant string, amount int64, currency string, status Status, ago time.Duration) Payment {
		return Payment{ChargeID: id, MerchantID: merchant, Amount: amount, Currency: currency, Status: status, CreatedAt: at.Add(-ago)}
	}
	earlier := []Payment{
		pay("ch_old", "m", 2500, "usd", StatusSucceeded, 3*time.Hour),
		pay("ch_new", "m", 2500, "usd", StatusPending, time.Minute),
		pay("ch_2", "m", 2500, "usd", StatusDeclined, 0), // the charge itself
		pay("ch_other_merchant", "m2", 2500, "usd", StatusSucceeded, time.Minute),
		pay("ch_other_amount", "m", 999, "usd", StatusSucceeded, time.Minute),
		pay("ch_other_currency", "m", 2500, "eur", StatusSucceeded, time.Minute),
		pay("ch_declined", "m", 2500, "usd", StatusDeclined, time.Minute),
		pay("ch_failed", "m", 2500, "usd", StatusFailed, time.Minute),
	}
	for _, tc := range []struct {
		name   string
		hold   decline.Hold
		read   bool
		want   []string // nil: no review
		unread bool
	}{
		{"possible duplicate", decline.HoldNoReattempt, true, []string{"ch_new", "ch_old"}, false},
		{"earlier payments unread", decline.HoldNoReattempt, false, []string{"ch_new", "ch_old"}, true},
		{"another decline", decline.HoldNone, true, nil, false},
		{"a rate limit", decline.HoldRateLimit, true, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := PossibleDuplicate(c, tc.hold, earlier, tc.read)
			if tc.want == nil {
				if r != nil {
					t.Fatalf("got review %+v, want none", r)
				}
				return
			}
			if r == nil || r.Reason != ReasonPossibleDuplicate {
				t.Fatalf("got review %+v, want %s", r, ReasonPossibleDuplicate)
			}
			var ev duplicateEvidence
			if err := json.Unmarshal(r.Evidence, &ev); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range ev.FirstPayments {
				got = append(got, p.ChargeID)
			}
			if len(got) != len(tc.want) || got[0] != tc.want[0] || got[1] != tc.want[1] || ev.Unread != tc.unread {
				t.Fatalf("first payments %v unread %v, want %v unread %v", got, ev.Unread, tc.want, tc.unread)
			}
		})
	}
}

// TestPossibleDuplicateQuery: only a possible duplicate with a card reads earlier payments,
// over the day before it, without itself.
func TestPossibleDuplicateQuery(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 12, 0, 0, 0, time.UTC)
	c := &Charge{ID: "ch_2", ProcessorAccount: "acct_1", Card: &Card{Fingerprint: "fp_1"}}
	q := PossibleDuplicateQuery(c, decline.HoldNoReattempt, at)
	if q == nil || q.Account != "acct_1" || q.Fingerprint != "fp_1" || !q.To.Equal(at) || !q.From.Equal(at.Add(-24*time.Hour)) || q.Except != "ch_2" {
		t.Fatalf("got %+v", q)
	}
	if q := PossibleDuplicateQuery(c, decline.HoldNone, at); q != nil {
		t.Fatalf("another decline: got %+v, want none", q)
	}
	if q := PossibleDuplicateQuery(&Charge{ID: "ch_3"}, decline.HoldNoReattempt, at); q != nil {
		t.Fatalf("no card: got %+v, want none", q)
	}
}
