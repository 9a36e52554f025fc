package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/report"
)

const day = 24 * time.Hour

// t0 is the start of the period the tests report on: [t0, t0+30d].
var t0 = time.Date(2031, 3, 1, 0, 0, 0, 0, time.UTC)

var period = report.Query{From: t0, To: t0.Add(30 * day)}

// at returns an attempt of the hand-made histories.
func at(charge string, when time.Time, o decline.Outcome, cl decline.Class, n decline.Network) report.Attempt {
	a := report.Attempt{Attempt: decline.Attempt{Charge: charge, At: when, Outcome: o, Class: cl, Network: n}}
	if n == decline.Visa && (o == decline.Declined || o == decline.Blocked) {
		a.Category = cl.VisaCategory()
	}
	return a
}

// reattempts returns a decline at start followed by n declined reattempts an hour apart.
func reattempts(start time.Time, n int, n0 decline.Network) []report.Attempt {
	as := []report.Attempt{at("ch_first", start, decline.Declined, decline.Funds, n0)}
	for i := 1; i <= n; i++ {
		as = append(as, at("ch_re", start.Add(time.Duration(i)*time.Hour), decline.Declined, decline.Funds, n0))
	}
	return as
}

// counts are the figures of a row the table below checks.
type counts struct {
	attempts, declines, reattempts int
	maxVisa30d, maxMC24h, maxMC30d int
	refused, violations            int
	rules                          []decline.Rule
	byClass                        map[decline.Class]int
	byCategory                     map[string]int
	merchants                      int
	merchantIDs                    []string
}

func countsOf(r report.Row) counts {
	c := counts{
		attempts: r.Attempts, declines: r.Declines, reattempts: r.Reattempts,
		maxVisa30d: r.MaxReattempts30d, maxMC24h: r.MaxDeclines24h, maxMC30d: r.MaxDeclines30d,
		refused: r.ReattemptsRefused, violations: r.Violations, merchants: r.Merchants, merchantIDs: r.MerchantIDs,
		byClass: map[decline.Class]int{}, byCategory: map[string]int{},
	}
	for _, v := range r.ViolationsDetail {
		c.rules = append(c.rules, v.Rule)
	}
	for k, v := range r.DeclinesByClass {
		if v != 0 {
			c.byClass[k] = v
		}
	}
	for k, v := range r.DeclinesByCategory {
		if v != 0 {
			c.byCategory[k] = v
		}
	}
	return c
}

func TestBuildHandMadeHistories(t *testing.T) {
	t.Parallel()
	one := []string{"m_a"}
	tests := []struct {
		name     string
		network  decline.Network
		attempts []report.Attempt
		want     counts
	}{
		{
			name:     "sixteen Visa reattempts in 30 days break the cap",
			network:  decline.Visa,
			attempts: reattempts(t0.Add(day), 16, decline.Visa),
			want: counts{attempts: 17, declines: 17, reattempts: 16, maxVisa30d: 16, violations: 1,
				rules: []decline.Rule{decline.RuleVisa30d}, byClass: map[decline.Class]int{decline.Funds: 17},
				byCategory: map[string]int{"2": 17}},
		},
		{
			name:     "fifteen Visa reattempts are within the cap",
			network:  decline.Visa,
			attempts: reattempts(t0.Add(day), 15, decline.Visa),
			want: counts{attempts: 16, declines: 16, reattempts: 15, maxVisa30d: 15,
				byClass: map[decline.Class]int{decline.Funds: 16}, byCategory: map[string]int{"2": 16}},
		},
		{
			name:    "an attempt after a never-class decline",
			network: decline.Visa,
			attempts: []report.Attempt{
				at("ch_lost", t0.Add(day), decline.Declined, decline.Never, decline.Visa),
				at("ch_again", t0.Add(2*day), decline.Approved, "", decline.Visa),
			},
			want: counts{attempts: 2, declines: 1, reattempts: 1, maxVisa30d: 1, violations: 1,
				rules: []decline.Rule{decline.RuleAfterNever}, byClass: map[decline.Class]int{decline.Never: 1},
				byCategory: map[string]int{"1": 1}},
		},
		{
			name:    "a never-class decline long before the period still forbids",
			network: decline.Visa,
			attempts: []report.Attempt{
				at("ch_lost", t0.Add(-90*day), decline.Declined, decline.Never, decline.Visa),
				at("ch_ok", t0.Add(-80*day), decline.Approved, "", decline.Visa),
				at("ch_again", t0.Add(day), decline.Approved, "", decline.Visa),
			},
			want: counts{attempts: 1, violations: 1, rules: []decline.Rule{decline.RuleAfterNever}},
		},
		{
			name:    "a violation before the period is not the period's, its window is",
			network: decline.Visa,
			attempts: append(reattempts(t0.Add(-5*day), 16, decline.Visa),
				at("ch_ok", t0.Add(-4*day), decline.Approved, "", decline.Visa),
				at("ch_later", t0.Add(day), decline.Approved, "", decline.Visa)),
			// The approval at -4 days is the 17th reattempt, and ends the run.
			want: counts{attempts: 1, maxVisa30d: 17},
		},
		{
			name:    "a run open before the lookback makes the period's attempt a reattempt",
			network: decline.Visa,
			attempts: []report.Attempt{
				at("ch_old", t0.Add(-31*day), decline.Declined, decline.Generic, decline.Visa),
				at("ch_now", t0.Add(day), decline.Declined, decline.Generic, decline.Visa),
			},
			want: counts{attempts: 1, declines: 1, reattempts: 1, maxVisa30d: 1,
				byClass: map[decline.Class]int{decline.Generic: 1}, byCategory: map[string]int{"4": 1}},
		},
		{
			name:    "an approval before the lookback closed the run",
			network: decline.Visa,
			attempts: []report.Attempt{
				at("ch_old", t0.Add(-31*day), decline.Approved, "", decline.Visa),
				at("ch_now", t0.Add(day), decline.Declined, decline.Generic, decline.Visa),
			},
			want: counts{attempts: 1, declines: 1,
				byClass: map[decline.Class]int{decline.Generic: 1}, byCategory: map[string]int{"4": 1}},
		},
		{
			name:     "eleven Mastercard declines in 24 hours",
			network:  decline.Mastercard,
			attempts: reattempts(t0.Add(day), 10, decline.Mastercard),
			want: counts{attempts: 11, declines: 11, reattempts: 10, maxMC24h: 11, maxMC30d: 11, violations: 1,
				rules: []decline.Rule{decline.RuleMastercard24h}, byClass: map[decline.Class]int{decline.Funds: 11}},
		},
		{
			name:     "a Mastercard 24-hour window across the period's start",
			network:  decline.Mastercard,
			attempts: reattempts(t0.Add(-8*time.Hour), 10, decline.Mastercard), // 8 before t0, 3 in the period
			want: counts{attempts: 3, declines: 3, reattempts: 3, maxMC24h: 11, maxMC30d: 11, violations: 1,
				rules: []decline.Rule{decline.RuleMastercard24h}, byClass: map[decline.Class]int{decline.Funds: 3}},
		},
		{
			name:    "processor blocks and attempts after the period",
			network: decline.Visa,
			attempts: []report.Attempt{
				at("ch_block", t0.Add(day), decline.Blocked, decline.Generic, decline.Visa),
				at("ch_late", t0.Add(40*day), decline.Declined, decline.Funds, decline.Visa),
			},
			want: counts{attempts: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			card := report.Card{ProcessorAccount: "acct_1", Fingerprint: "fp_1", Network: tt.network,
				Merchants: one, Attempts: tt.attempts}
			rows := report.Build([]report.Card{card}, period, decline.DefaultCaps())
			if len(rows) != 1 {
				t.Fatalf("rows: got %d, want 1", len(rows))
			}
			tt.want.merchants, tt.want.merchantIDs = 1, one
			if tt.want.byClass == nil {
				tt.want.byClass = map[decline.Class]int{}
			}
			if tt.want.byCategory == nil {
				tt.want.byCategory = map[string]int{}
			}
			got := countsOf(rows[0])
			if !equalCounts(got, tt.want) {
				t.Errorf("got %+v,\nwant %+v", got, tt.want)
			}
		})
	}
}

func equalCounts(a, b counts) bool {
	return a.attempts == b.attempts && a.declines == b.declines && a.reattempts == b.reattempts &&
		a.maxVisa30d == b.maxVisa30d && a.maxMC24h == b.maxMC24h && a.maxMC30d == b.maxMC30d &&
		a.refused == b.refused && a.violations == b.violations && slices.Equal(a.rules, b.rules) &&
		mapsEqual(a.byClass, b.byClass) && mapsEqual(a.byCategory, b.byCategory) &&
		a.merchants == b.merchants && slices.Equal(a.merchantIDs, b.merchantIDs)
}

func mapsEqual[K comparable](a, b map[K]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestBuildScope(t *testing.T) {
	t.Parallel()
	card := report.Card{ProcessorAccount: "acct_1", Fingerprint: "fp_1", Network: decline.Visa,
		Merchants: []string{"m_a", "m_b"}, Refused: 3,
		Attempts: []report.Attempt{at("ch_1", t0.Add(day), decline.Declined, decline.Funds, decline.Visa)}}
	tests := []struct {
		merchant string
		want     []string
	}{
		{"", []string{"m_a", "m_b"}},
		{"m_a", []string{"m_a"}},
		{"m_b", []string{"m_b"}},
	}
	for _, tt := range tests {
		q := period
		q.Merchant = tt.merchant
		r := report.Build([]report.Card{card}, q, decline.Caps{})[0]
		if r.Merchants != 2 || !slices.Equal(r.MerchantIDs, tt.want) || r.ReattemptsRefused != 3 {
			t.Errorf("merchant %q: got merchants %d %v refused %d, want 2 %v 3", tt.merchant, r.Merchants, r.MerchantIDs,
				r.ReattemptsRefused, tt.want)
		}
	}
}

func TestBuildOrder(t *testing.T) {
	t.Parallel()
	cards := []report.Card{
		{ProcessorAccount: "acct_2", Fingerprint: "fp_a"},
		{ProcessorAccount: "acct_1", Fingerprint: "fp_b"},
		{ProcessorAccount: "acct_1", Fingerprint: "fp_a"},
	}
	var got []string
	for _, r := range report.Build(cards, period, decline.Caps{}) {
		got = append(got, r.ProcessorAccount+"/"+r.Fingerprint)
	}
	if want := []string{"acct_1/fp_a", "acct_1/fp_b", "acct_2/fp_a"}; !slices.Equal(got, want) {
		t.Fatalf("order: got %v, want %v", got, want)
	}
}

func TestPeriod(t *testing.T) {
	t.Parallel()
	now := time.Date(2031, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name         string
		from, to     time.Time
		wantFrom     time.Time
		wantTo       time.Time
		wantErrParam string
	}{
		{name: "defaults", wantFrom: now.Add(-30 * day), wantTo: now},
		{name: "from only", from: now.Add(-2 * day), wantFrom: now.Add(-2 * day), wantTo: now},
		{name: "to only", to: now.Add(-day), wantFrom: now.Add(-31 * day), wantTo: now.Add(-day)},
		{name: "one instant", from: now, to: now, wantFrom: now, wantTo: now},
		{name: "a leap year", from: now.Add(-366 * day), to: now, wantFrom: now.Add(-366 * day), wantTo: now},
		{name: "backwards", from: now, to: now.Add(-time.Second), wantErrParam: "from"},
		{name: "from in the future", from: now.Add(time.Hour), wantErrParam: "from"},
		{name: "too long", from: now.Add(-366*day - time.Second), to: now, wantErrParam: "to"},
	}
	for _, tt := range tests {
		q, err := report.Period(report.Query{From: tt.from, To: tt.to}, now)
		var qe *report.QueryError
		switch {
		case tt.wantErrParam != "":
			if !errors.As(err, &qe) || qe.Param != tt.wantErrParam || !errors.Is(err, report.ErrInvalidQuery) {
				t.Errorf("%s: got %v, want a QueryError on %s", tt.name, err, tt.wantErrParam)
			}
		case err != nil:
			t.Errorf("%s: got %v, want no error", tt.name, err)
		case !q.From.Equal(tt.wantFrom) || !q.To.Equal(tt.wantTo):
			t.Errorf("%s: got [%v, %v], want [%v, %v]", tt.name, q.From, q.To, tt.wantFrom, tt.wantTo)
		}
	}
}

// fakeStore answers with fixed cards and remembers the query.
type fakeStore struct {
	cards []report.Card
	got   report.Query
}

func (f *fakeStore) ReattemptCards(_ context.Context, q report.Query) ([]report.Card, error) {
	f.got = q
	return f.cards, nil
}

func TestServiceEncodings(t *testing.T) {
	t.Parallel()
	st := &fakeStore{cards: []report.Card{{ProcessorAccount: "acct_1", Fingerprint: "fp_1", Network: decline.Visa,
		Merchants: []string{"m_a", "m_b"}, Refused: 2,
		Attempts: reattempts(t0.Add(day), 16, decline.Visa)}}}
	svc := report.New(report.Config{Store: st, Now: func() time.Time { return t0.Add(30 * day) }})
	rep, err := svc.Reattempts(context.Background(), report.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if !st.got.From.Equal(t0) || !st.got.To.Equal(t0.Add(30*day)) {
		t.Fatalf("store query: got [%v, %v], want the 30 days to now", st.got.From, st.got.To)
	}

	var csvOut bytes.Buffer
	if err := report.WriteCSV(&csvOut, rep); err != nil {
		t.Fatal(err)
	}
	wantCSV := strings.Join(report.Columns, ",") + "\n" +
		"acct_1,fp_1,visa,2,m_a;m_b,17,17,0,0,17,0,0,0,17,0,0,16,16,0,0,2,1,0,0\n"
	if csvOut.String() != wantCSV {
		t.Errorf("CSV: got\n%s\nwant\n%s", csvOut.String(), wantCSV)
	}

	var jsonOut bytes.Buffer
	if err := report.WriteJSON(&jsonOut, rep); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Object string            `json:"object"`
		From   string            `json:"from"`
		To     string            `json:"to"`
		Data   []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(jsonOut.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Object != "list" || doc.From != "2031-03-01T00:00:00Z" || doc.To != "2031-03-31T00:00:00Z" || len(doc.Data) != 1 {
		t.Fatalf("JSON: got %s", jsonOut.String())
	}
	var row map[string]any
	if err := json.Unmarshal(doc.Data[0], &row); err != nil {
		t.Fatal(err)
	}
	// Every column of the CSV is a field of the JSON row, or a key of its maps.
	for _, col := range report.Columns {
		if _, ok := row[col]; ok {
			continue
		}
		byClass, _ := row["declines_by_class"].(map[string]any)
		byCat, _ := row["declines_by_category"].(map[string]any)
		if _, ok := byClass[strings.TrimPrefix(col, "declines_")]; ok {
			continue
		}
		if _, ok := byCat[strings.TrimPrefix(col, "declines_category_")]; ok && strings.HasPrefix(col, "declines_category_") {
			continue
		}
		t.Errorf("CSV column %q is not in the JSON row %s", col, doc.Data[0])
	}
	detail, _ := row["violations_detail"].([]any)
	if row["violations"] != float64(1) || len(detail) != 1 || detail[0].(map[string]any)["rule"] != "visa_30d" {
		t.Errorf("violations: got %v %v, want 1 visa_30d", row["violations"], row["violations_detail"])
	}

	// An empty report is still a list with a header row.
	empty := report.Reattempts{From: t0, To: t0}
	jsonOut.Reset()
	csvOut.Reset()
	if err := report.WriteJSON(&jsonOut, empty); err != nil || !strings.Contains(jsonOut.String(), `"data":[]`) {
		t.Errorf("empty JSON: got %s (%v)", jsonOut.String(), err)
	}
	if err := report.WriteCSV(&csvOut, empty); err != nil || csvOut.String() != strings.Join(report.Columns, ",")+"\n" {
		t.Errorf("empty CSV: got %q (%v)", csvOut.String(), err)
	}
}

// TestBuildInHindsight: a charge sent while an earlier one on the card was pending, which
// reconciliation later found declined as lost, broke the never-class rule only in hindsight:
// the row counts it apart from the violations. A charge sent after the decline was found is a
// violation.
func TestBuildInHindsight(t *testing.T) {
	t.Parallel()
	pending := at("ch_pending", t0.Add(day), decline.Declined, decline.Never, decline.Visa)
	pending.KnownAt = t0.Add(day + time.Hour) // reconciliation found the decline an hour later
	next := at("ch_next", t0.Add(day+time.Minute), decline.Approved, "", decline.Visa)
	after := at("ch_after", t0.Add(2*day), decline.Approved, "", decline.Visa)
	rows := report.Build([]report.Card{{ProcessorAccount: "acct_1", Fingerprint: "fp_1", Network: decline.Visa,
		Merchants: []string{"m_1"}, Attempts: []report.Attempt{pending, next, after}}}, period, decline.Caps{})
	r := rows[0]
	if r.Violations != 1 || r.ViolationsDetail[0].Charge != "ch_after" ||
		r.ViolationsInHindsight != 1 || r.ViolationsInHindsightDetail[0].Charge != "ch_next" {
		t.Fatalf("violations %d %v, in hindsight %d %v; want ch_after a violation, ch_next in hindsight",
			r.Violations, r.ViolationsDetail, r.ViolationsInHindsight, r.ViolationsInHindsightDetail)
	}
}
