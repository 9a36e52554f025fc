package sim_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"
)

// createSeries makes n PaymentIntents a minute apart, returning their ids
// oldest first and their created times.
func createSeries(t *testing.T, b *bundle, n int, customer func(i int) string) ([]string, []int64) {
	t.Helper()
	var ids []string
	var created []int64
	for i := range n {
		p := charge("pm_card_visa", "series-"+string(rune('a'+i)))
		if c := customer(i); c != "" {
			p.Customer = stripe.String(c)
		}
		pi, err := b.pi.New(p)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, pi.ID)
		created = append(created, pi.Created)
		b.clock.Advance(time.Minute)
	}
	return ids, created
}

func noCustomer(int) string { return "" }

func listIDs(t *testing.T, b *bundle, p *stripe.PaymentIntentListParams) []string {
	t.Helper()
	var out []string
	it := b.pi.List(p)
	for it.Next() {
		out = append(out, it.PaymentIntent().ID)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func reversed(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[len(ids)-1-i] = id
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestListPagination(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids, created := createSeries(t, b, 7, noCustomer)
	newestFirst := reversed(ids)
	cases := []struct {
		name   string
		params func() *stripe.PaymentIntentListParams
		want   []string
	}{
		{"all pages of 2", func() *stripe.PaymentIntentListParams {
			p := &stripe.PaymentIntentListParams{}
			p.Limit = stripe.Int64(2)
			return p
		}, newestFirst},
		{"created gte", func() *stripe.PaymentIntentListParams {
			return &stripe.PaymentIntentListParams{CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: created[4]}}
		}, newestFirst[:3]},
		{"created gt and lte", func() *stripe.PaymentIntentListParams {
			p := &stripe.PaymentIntentListParams{CreatedRange: &stripe.RangeQueryParams{
				GreaterThan: created[1], LesserThanOrEqual: created[4]}}
			p.Limit = stripe.Int64(1)
			return p
		}, reversed(ids[2:5])},
		{"created lt", func() *stripe.PaymentIntentListParams {
			return &stripe.PaymentIntentListParams{CreatedRange: &stripe.RangeQueryParams{LesserThan: created[2]}}
		}, reversed(ids[:2])},
		{"created exact", func() *stripe.PaymentIntentListParams {
			return &stripe.PaymentIntentListParams{Created: stripe.Int64(created[3])}
		}, []string{ids[3]}},
		{"starting after", func() *stripe.PaymentIntentListParams {
			p := &stripe.PaymentIntentListParams{}
			p.StartingAfter = stripe.String(ids[3])
			p.Limit = stripe.Int64(2)
			return p
		}, reversed(ids[:3])},
		{"ending before, paging toward the newest", func() *stripe.PaymentIntentListParams {
			p := &stripe.PaymentIntentListParams{}
			p.EndingBefore = stripe.String(ids[2])
			p.Limit = stripe.Int64(2)
			return p
		}, ids[3:]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := listIDs(t, b, tc.params()); !equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestListPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids, _ := createSeries(t, b, 5, func(i int) string {
		if i%2 == 0 {
			return "cus_even"
		}
		return ""
	})
	p := &stripe.PaymentIntentListParams{Customer: stripe.String("cus_even")}
	p.Limit = stripe.Int64(2)
	p.Single = true
	it := b.pi.List(p)
	var got []string
	for it.Next() {
		got = append(got, it.PaymentIntent().ID)
	}
	list := it.PaymentIntentList()
	if !equal(got, []string{ids[4], ids[2]}) || !list.HasMore || list.URL != "/v1/payment_intents" {
		t.Errorf("got %v has_more %v url %q, want [%s %s] true /v1/payment_intents", got, list.HasMore, list.URL, ids[4], ids[2])
	}
	p.StartingAfter = stripe.String(ids[2])
	it = b.pi.List(p)
	got = nil
	for it.Next() {
		got = append(got, it.PaymentIntent().ID)
	}
	if !equal(got, []string{ids[0]}) || it.PaymentIntentList().HasMore {
		t.Errorf("got %v has_more %v, want [%s] false", got, it.PaymentIntentList().HasMore, ids[0])
	}
}

func TestListErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		query string
		param string
	}{
		{"limit=0", "limit"},
		{"limit=101", "limit"},
		{"limit=ten", "limit"},
		{"starting_after=pi_missing", "starting_after"},
		{"ending_before=pi_missing", "ending_before"},
		{"created[gte]=soon", "created[gte]"},
		{"created[between]=1", "created[between]"},
		{"colour=red", "colour"},
	}
	for _, tc := range cases {
		status, _, body := b.do(t, http.MethodGet, "/v1/payment_intents?"+tc.query, nil, nil)
		var env struct {
			Error struct {
				Param string `json:"param"`
				Type  string `json:"type"`
			} `json:"error"`
		}
		if err := jsonUnmarshal(body, &env); err != nil {
			t.Fatal(err)
		}
		if status != http.StatusBadRequest || env.Error.Param != tc.param || env.Error.Type != "invalid_request_error" {
			t.Errorf("%s: got %d param %q, want 400 param %q", tc.query, status, env.Error.Param, tc.param)
		}
	}
}
