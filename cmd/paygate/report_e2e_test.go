package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/report"
)

// reportRow is a row of the reattempt report, as a client decodes it.
type reportRow struct {
	ProcessorAccount   string         `json:"processor_account"`
	Fingerprint        string         `json:"fingerprint"`
	Network            string         `json:"network"`
	Merchants          int            `json:"merchants"`
	MerchantIDs        []string       `json:"merchant_ids"`
	Attempts           int            `json:"attempts"`
	Declines           int            `json:"declines"`
	DeclinesByClass    map[string]int `json:"declines_by_class"`
	DeclinesByCategory map[string]int `json:"declines_by_category"`
	Reattempts         int            `json:"reattempts"`
	MaxReattempts30d   int            `json:"max_reattempts_30d"`
	MaxDeclines24h     int            `json:"max_declines_24h"`
	MaxDeclines30d     int            `json:"max_declines_30d"`
	ReattemptsRefused  int            `json:"reattempts_refused"`
	Violations         int            `json:"violations"`
	ViolationsDetail   []struct {
		Charge string `json:"charge"`
		Rule   string `json:"rule"`
	} `json:"violations_detail"`
}

type reportDoc struct {
	Object string      `json:"object"`
	From   time.Time   `json:"from"`
	To     time.Time   `json:"to"`
	Data   []reportRow `json:"data"`
}

// fingerprint returns the simulator's fingerprint of a payment method's card.
func (g *gateway) fingerprint(pm string) string {
	g.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, g.simBase+"/v1/payment_methods/"+pm, nil)
	req.Header.Set("Authorization", "Bearer "+simSecretKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		Card struct {
			Fingerprint string `json:"fingerprint"`
		} `json:"card"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || m.Card.Fingerprint == "" {
		g.t.Fatalf("payment method %s: no fingerprint (%v)", pm, err)
	}
	return m.Card.Fingerprint
}

func TestReattemptReport(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	a, b := g.key("m_rep_a", "checkout"), g.key("m_rep_b", "checkout")
	auditorA, operatorA, auditorB := g.key("m_rep_a", "auditor"), g.key("m_rep_a", "operator"), g.key("m_rep_b", "auditor")
	body := func(pm string) string {
		return `{"amount":1000,"currency":"usd","payment_method":"` + pm + `","initiator":"merchant","customer":"cus_1"}`
	}
	expect := func(r reply, status int, what string) map[string]any {
		t.Helper()
		if r.status != status {
			t.Fatalf("%s: got %d %s, want %d", what, r.status, r.body, status)
		}
		return r.json(t)
	}
	from := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)

	// The Visa test card is lost (category 1): both merchants' next charges on it are
	// refused at the door, since one processor account is one merchant to the networks.
	expect(g.charge(a, "lost", body("pm_sim_decline_lost_card_visa_41")), 402, "lost card")
	expect(g.charge(a, "lost-again", body("pm_card_visa")), 422, "merchant A on the lost card")
	expect(g.charge(b, "lost-b", body("pm_card_visa")), 422, "merchant B on the lost card")
	// A funds decline on Visa card 5, reattempted too early.
	funds := expect(g.charge(a, "funds", body("pm_sim_decline_insufficient_funds_visa_51_card5")), 402, "funds")
	expect(g.do(http.MethodPost, "/v1/charges/"+funds["id"].(string)+"/reattempt", a,
		map[string]string{"Idempotency-Key": "funds-early"}, "{}"), 422, "early reattempt")
	// A Mastercard decline with advice 03, do not try again.
	expect(g.charge(a, "mc", body("pm_sim_decline_do_not_honor_mc_05_mac03")), 402, "Mastercard MAC 03")
	// Two approvals on Visa card 8; the first is then rewritten in the database into a
	// never-class decline, a history the enforcement would have refused: the report, which
	// recounts the history on its own, must find the second attempt a violation.
	first := expect(g.charge(a, "card8-1", body("pm_sim_approve_visa_card8")), 200, "card 8")
	second := expect(g.charge(a, "card8-2", body("pm_sim_approve_visa_card8")), 200, "card 8 again")
	// Merchant B's own card, which merchant A's report must not show.
	expect(g.charge(b, "b-own", body("pm_sim_approve_visa_card9")), 200, "merchant B's card")
	conn, err := pgx.Connect(context.Background(), g.env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `UPDATE card_attempts SET outcome = 'declined', class = 'never', category = 1
		WHERE charge_id = $1`, first["id"]); err != nil {
		t.Fatal(err)
	}
	historyRewritten(t, conn)
	to := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	period := "?from=" + url.QueryEscape(from.Format(time.RFC3339)) + "&to=" + url.QueryEscape(to.Format(time.RFC3339))

	lost, card5, mc, card8, card9 := g.fingerprint("pm_card_visa"), g.fingerprint("pm_sim_approve_visa_card5"),
		g.fingerprint("pm_card_mastercard"), g.fingerprint("pm_sim_approve_visa_card8"), g.fingerprint("pm_sim_approve_visa_card9")
	cats := func(c1, c2 int) map[string]int { return map[string]int{"1": c1, "2": c2, "3": 0, "4": 0} }
	classes := func(never, funds int) map[string]int {
		return map[string]int{"never": never, "fix_data": 0, "funds": funds, "issuer_transient": 0, "generic": 0, "authenticate": 0}
	}
	wantA := map[string]reportRow{
		lost: {Network: "visa", Merchants: 2, MerchantIDs: []string{"m_rep_a"}, Attempts: 1, Declines: 1,
			DeclinesByClass: classes(1, 0), DeclinesByCategory: cats(1, 0), ReattemptsRefused: 2},
		card5: {Network: "visa", Merchants: 1, MerchantIDs: []string{"m_rep_a"}, Attempts: 1, Declines: 1,
			DeclinesByClass: classes(0, 1), DeclinesByCategory: cats(0, 1), ReattemptsRefused: 1},
		mc: {Network: "mastercard", Merchants: 1, MerchantIDs: []string{"m_rep_a"}, Attempts: 1, Declines: 1,
			DeclinesByClass: classes(1, 0), DeclinesByCategory: cats(0, 0), MaxDeclines24h: 1, MaxDeclines30d: 1},
		card8: {Network: "visa", Merchants: 1, MerchantIDs: []string{"m_rep_a"}, Attempts: 2, Declines: 1,
			DeclinesByClass: classes(1, 0), DeclinesByCategory: cats(1, 0), Reattempts: 1, MaxReattempts30d: 1,
			Violations: 1},
	}

	// JSON, as merchant A's auditor.
	r := g.do(http.MethodGet, "/v1/reports/reattempts"+period, auditorA, nil, "")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Fatalf("JSON report: got %d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	var doc reportDoc
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Object != "list" || !doc.From.Equal(from) || !doc.To.Equal(to) {
		t.Fatalf("JSON report: got object %q from %v to %v, want list from %v to %v", doc.Object, doc.From, doc.To, from, to)
	}
	if len(doc.Data) != len(wantA) {
		t.Fatalf("JSON report: got %d rows %s, want %d", len(doc.Data), r.body, len(wantA))
	}
	for _, row := range doc.Data {
		want, ok := wantA[row.Fingerprint]
		if !ok {
			t.Fatalf("JSON report: a row for card %s, which merchant A never touched", row.Fingerprint)
		}
		want.ProcessorAccount, want.Fingerprint = row.ProcessorAccount, row.Fingerprint
		detail := row.ViolationsDetail
		row.ViolationsDetail, want.ViolationsDetail = nil, nil
		if !strings.HasPrefix(row.ProcessorAccount, "acct_") || !rowsEqual(row, want) {
			t.Errorf("card %s: got %+v,\nwant %+v", row.Fingerprint, row, want)
		}
		if row.Fingerprint == card8 && (len(detail) != 1 || detail[0].Rule != "after_never" || detail[0].Charge != second["id"]) {
			t.Errorf("card 8 violations: got %+v, want after_never on %s", detail, second["id"])
		}
	}

	// CSV, as merchant A's operator: the same figures.
	r = g.do(http.MethodGet, "/v1/reports/reattempts"+period+"&format=csv", operatorA, nil, "")
	if r.status != 200 || r.header.Get("Content-Type") != "text/csv; charset=utf-8" {
		t.Fatalf("CSV report: got %d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	recs, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+len(wantA) || !slices.Equal(recs[0], report.Columns) {
		t.Fatalf("CSV report: got %q, want a header and %d rows", recs, len(wantA))
	}
	col := func(rec []string, name string) string { return rec[slices.Index(report.Columns, name)] }
	for _, rec := range recs[1:] {
		fp := col(rec, "fingerprint")
		want := wantA[fp]
		if col(rec, "merchant_ids") != "m_rep_a" || col(rec, "attempts") != strconv.Itoa(want.Attempts) ||
			col(rec, "declines_never") != strconv.Itoa(want.DeclinesByClass["never"]) ||
			col(rec, "declines_category_1") != strconv.Itoa(want.DeclinesByCategory["1"]) ||
			col(rec, "reattempts_refused") != strconv.Itoa(want.ReattemptsRefused) || col(rec, "violations") != strconv.Itoa(want.Violations) {
			t.Errorf("CSV row for %s: got %q, want %+v", fp, rec, want)
		}
	}

	// Merchant B's auditor sees the shared card and its own, not merchant A's.
	r = g.do(http.MethodGet, "/v1/reports/reattempts"+period, auditorB, nil, "")
	var docB reportDoc
	if err := json.Unmarshal(r.body, &docB); err != nil || r.status != 200 {
		t.Fatalf("merchant B's report: got %d %s", r.status, r.body)
	}
	var seenB []string
	for _, row := range docB.Data {
		seenB = append(seenB, row.Fingerprint)
		if !slices.Equal(row.MerchantIDs, []string{"m_rep_b"}) {
			t.Errorf("merchant B's report names %v", row.MerchantIDs)
		}
	}
	slices.Sort(seenB)
	wantB := []string{lost, card9}
	slices.Sort(wantB)
	if !slices.Equal(seenB, wantB) {
		t.Errorf("merchant B's report: got cards %v, want %v", seenB, wantB)
	}

	// Who may ask, and what is refused.
	for _, tc := range []struct {
		name, query, key string
		wantStatus       int
		wantCode         string
		wantParam        string
	}{
		{"checkout key", "", a, 403, "forbidden", ""},
		{"no key", "", "", 401, "unauthorized", ""},
		{"default period", "", auditorA, 200, "", ""},
		{"bad from", "?from=yesterday", auditorA, 400, "parameter_invalid", "from"},
		{"bad to", "?to=2026-13-01T00:00:00Z", auditorA, 400, "parameter_invalid", "to"},
		{"from after to", "?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z", auditorA, 400, "parameter_invalid", "from"},
		{"over a year", "?from=2024-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", auditorA, 400, "parameter_invalid", "to"},
		{"unknown format", "?format=xml", auditorA, 400, "parameter_invalid", "format"},
		{"unknown parameter", "?merchant=m_rep_b", auditorA, 400, "parameter_unknown", "merchant"},
		{"twice", "?format=csv&format=json", auditorA, 400, "parameter_invalid", "format"},
	} {
		r := g.do(http.MethodGet, "/v1/reports/reattempts"+tc.query, tc.key, nil, "")
		if r.status != tc.wantStatus {
			t.Errorf("%s: got %d %s, want %d", tc.name, r.status, r.body, tc.wantStatus)
			continue
		}
		if tc.wantCode == "" {
			continue
		}
		e, _ := r.json(t)["error"].(map[string]any)
		if e["code"] != tc.wantCode || (tc.wantParam != "" && e["param"] != tc.wantParam) {
			t.Errorf("%s: got error %v, want %s on %q", tc.name, e, tc.wantCode, tc.wantParam)
		}
	}

	// The command line prints the same report: byte for byte for merchant A's scope, and
	// every card of every merchant without one.
	getenv := func(k string) string { return g.env[k] }
	run := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		code := Run(context.Background(), append([]string{"report", "reattempts"}, args...), &out, &errOut, getenv)
		return out.String(), errOut.String(), code
	}
	apiJSON := g.do(http.MethodGet, "/v1/reports/reattempts"+period, auditorA, nil, "").body
	out, errOut, code := run("--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339), "--format", "json",
		"--merchant", "m_rep_a")
	if code != 0 || out != string(apiJSON) {
		t.Errorf("CLI JSON for merchant A: exit %d %s\ngot  %s\nwant %s", code, errOut, out, apiJSON)
	}
	out, errOut, code = run("--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339))
	if code != 0 {
		t.Fatalf("CLI CSV: exit %d %s", code, errOut)
	}
	recs, err = csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) != 6 || !slices.Equal(recs[0], report.Columns) {
		t.Fatalf("CLI CSV: got %q (%v), want a header and 5 cards", out, err)
	}
	for _, rec := range recs[1:] {
		if col(rec, "fingerprint") == lost && (col(rec, "merchant_ids") != "m_rep_a;m_rep_b" || col(rec, "merchants") != "2") {
			t.Errorf("CLI CSV, shared card: got %q, want both merchants named", rec)
		}
	}
	for _, args := range [][]string{
		{"--format", "xml"},
		{"--from", "yesterday"},
		{"--from", "2026-02-01T00:00:00Z", "--to", "2026-01-01T00:00:00Z"},
		{"extra"},
	} {
		if _, errOut, code := run(args...); code != exitUsage || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("CLI %v: got exit %d %q, want %d and one line", args, code, errOut, exitUsage)
		}
	}
	if code := Run(context.Background(), []string{"report", "nope"}, &bytes.Buffer{}, &bytes.Buffer{}, getenv); code != exitUsage {
		t.Errorf("CLI report nope: got exit %d, want %d", code, exitUsage)
	}
}

func rowsEqual(a, b reportRow) bool {
	eq := func(x, y map[string]int) bool {
		if len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if y[k] != v {
				return false
			}
		}
		return true
	}
	return a.ProcessorAccount == b.ProcessorAccount && a.Fingerprint == b.Fingerprint && a.Network == b.Network &&
		a.Merchants == b.Merchants && slices.Equal(a.MerchantIDs, b.MerchantIDs) && a.Attempts == b.Attempts &&
		a.Declines == b.Declines && eq(a.DeclinesByClass, b.DeclinesByClass) &&
		eq(a.DeclinesByCategory, b.DeclinesByCategory) && a.Reattempts == b.Reattempts &&
		a.MaxReattempts30d == b.MaxReattempts30d && a.MaxDeclines24h == b.MaxDeclines24h &&
		a.MaxDeclines30d == b.MaxDeclines30d && a.ReattemptsRefused == b.ReattemptsRefused && a.Violations == b.Violations
}
