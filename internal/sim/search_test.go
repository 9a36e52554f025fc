package sim_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"

	"github.com/paygate/paygate/internal/sim"
)

func searchIDs(t *testing.T, b *bundle, query string, limit int64) []string {
	t.Helper()
	p := &stripe.PaymentIntentSearchParams{}
	p.Query = query
	if limit > 0 {
		p.Limit = stripe.Int64(limit)
	}
	it := b.pi.Search(p)
	var out []string
	for it.Next() {
		out = append(out, it.PaymentIntent().ID)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSearchLag(t *testing.T) {
	t.Parallel()
	b := setup(t, withConfig(func(c *sim.Config) { c.SearchLag = 10 * time.Second }))
	pi, err := b.pi.New(charge("pm_card_visa", "order-1"))
	if err != nil {
		t.Fatal(err)
	}
	q := "metadata['charge_id']:'ch_order-1'"
	if got := searchIDs(t, b, q, 0); len(got) != 0 {
		t.Errorf("got %v at once, want nothing before the lag", got)
	}
	// Retrieve and list are consistent at once.
	if _, err := b.pi.Get(pi.ID, nil); err != nil {
		t.Errorf("got %v on retrieve, want the PaymentIntent at once", err)
	}
	if got := listIDs(t, b, &stripe.PaymentIntentListParams{}); !equal(got, []string{pi.ID}) {
		t.Errorf("got list %v, want [%s] at once", got, pi.ID)
	}
	b.clock.Advance(9 * time.Second)
	if got := searchIDs(t, b, q, 0); len(got) != 0 {
		t.Errorf("got %v after 9s, want nothing before the lag", got)
	}
	b.clock.Advance(time.Second)
	if got := searchIDs(t, b, q, 0); !equal(got, []string{pi.ID}) {
		t.Errorf("got %v after the lag, want [%s]", got, pi.ID)
	}
}

func TestSearchQueries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []string
	for i, md := range []map[string]string{
		{"charge_id": "a", "merchant": "m1"},
		{"charge_id": "b", "merchant": "m1"},
		{"charge_id": "c", "merchant": "m2"},
		{"charge_id": "it's", "merchant": "m2"},
	} {
		p := charge("pm_card_visa", "k"+string(rune('0'+i)))
		if i == 2 {
			p.PaymentMethod = stripe.String("pm_card_chargeDeclined")
		}
		p.Metadata = md
		pi, err := b.pi.New(p)
		if err != nil {
			pi = stripeError(t, err).PaymentIntent
		}
		ids = append(ids, pi.ID)
		b.clock.Advance(time.Second)
	}
	cases := []struct {
		query string
		want  []string
	}{
		{"metadata['charge_id']:'a'", []string{ids[0]}},
		{`metadata["merchant"]:"m1"`, []string{ids[1], ids[0]}},
		{"metadata['merchant']:'m2' AND status:'succeeded'", []string{ids[3]}},
		{"metadata['merchant']:'m2' status:'requires_payment_method'", []string{ids[2]}},
		{"metadata['charge_id']:'a' OR metadata['charge_id']:'c'", []string{ids[2], ids[0]}},
		{"metadata['charge_id']:'it\\'s'", []string{ids[3]}},
		{"-metadata['merchant']:'m1' and currency:'USD'", []string{ids[3], ids[2]}},
		{"metadata['absent']:null AND amount>=1999 AND amount<2000", []string{ids[3], ids[2], ids[1], ids[0]}},
		{"metadata['charge_id']:'zzz'", nil},
	}
	for _, tc := range cases {
		if got := searchIDs(t, b, tc.query, 0); !equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.query, got, tc.want)
		}
	}
	// Pages of one follow next_page to the end.
	if got := searchIDs(t, b, "currency:'usd'", 1); !equal(got, reversed(ids)) {
		t.Errorf("got %v paging by one, want %v", got, reversed(ids))
	}
	p := &stripe.PaymentIntentSearchParams{}
	p.Query = "currency:'usd'"
	p.Limit = stripe.Int64(3)
	p.Single = true
	p.AddExpand("total_count")
	it := b.pi.Search(p)
	for it.Next() {
	}
	res := it.PaymentIntentSearchResult()
	if !res.HasMore || res.NextPage == nil || res.TotalCount == nil || *res.TotalCount != 4 || res.URL != "/v1/payment_intents/search" {
		t.Errorf("got has_more %v next_page %v total %v, want true, a token, 4", res.HasMore, res.NextPage, res.TotalCount)
	}
}

func TestSearchErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, q := range []string{
		"", "metadata:'x'", "colour:'red'", "status:succeeded", "metadata['a']:'x' AND status:'y' OR currency:'usd'",
		"amount:'ten'", "metadata['a']:'unterminated", "status:'a' AND",
	} {
		status, _, body := b.do(t, http.MethodGet, "/v1/payment_intents/search?query="+url.QueryEscape(q), nil, nil)
		var env struct {
			Error struct {
				Param string `json:"param"`
			} `json:"error"`
		}
		if err := jsonUnmarshal(body, &env); err != nil {
			t.Fatal(err)
		}
		if status != http.StatusBadRequest || env.Error.Param != "query" {
			t.Errorf("query %q: got %d param %q, want 400 param query", q, status, env.Error.Param)
		}
	}
	status, _, _ := b.do(t, http.MethodGet, "/v1/payment_intents/search?query=status:'x'&page=garbage", nil, nil)
	if status != http.StatusBadRequest {
		t.Errorf("got %d for a bad page token, want 400", status)
	}
}
