package sim

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

func FuzzFormKey(f *testing.F) {
	for _, s := range []string{
		"amount", "metadata[charge_id]", "expand[]", "payment_method_types[0]", "created[gte]",
		"payment_method_options[card][network]", "a[b", "a]b", "[x]", "a[b]c", "a[[b]]", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		name, parts, err := parseFormKey(key)
		if err != nil {
			return
		}
		if name == "" || strings.ContainsAny(name, "[]") {
			t.Fatalf("parseFormKey(%q): got name %q, want a non-empty name without brackets", key, name)
		}
		if got := formatFormKey(name, parts); got != key {
			t.Fatalf("parseFormKey(%q) formatted back: got %q, want the key", key, got)
		}
	})
}

func FuzzParseParams(f *testing.F) {
	for _, s := range []string{
		"amount=1999&currency=usd&payment_method=pm_card_visa&confirm=true&metadata[charge_id]=c1",
		"payment_method_types[0]=card&payment_method_types[1]=link&expand[]=latest_charge",
		"created[gte]=1&created[lt]=5&limit=3", "metadata=&metadata[a]=b", "expand[9999]=x", "a=%zz",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		values, err := url.ParseQuery(body)
		if err != nil {
			return
		}
		_, _ = validateCreate(values)
		p, e := parseParams(values, listIntentParams)
		if e != nil {
			if e.status != 400 || e.Type != typeInvalidRequest {
				t.Fatalf("got %d %s, want 400 invalid_request_error", e.status, e.Type)
			}
			return
		}
		if _, _, e := createdBounds(p); e != nil && e.Param == "" {
			t.Fatalf("got an error without param: %+v", e)
		}
		if n, e := parseLimit(p); e == nil && (n < 1 || n > 100) {
			t.Fatalf("got limit %d, want 1-100", n)
		}
	})
}

func FuzzSearchQuery(f *testing.F) {
	for _, s := range []string{
		"metadata['charge_id']:'ch_1'",
		`metadata["a"]:"b" AND status:'succeeded'`,
		"amount>=100 OR amount<5",
		"-currency:'usd' customer:'cus_1'",
		"metadata['k']:null",
		"metadata['x']~'abc'",
		"created>1700000000",
		"metadata['it\\'s']:'a\\\\b'",
		"status:'a' AND", "colour:'x'", "amount:'x'", "",
	} {
		f.Add(s)
	}
	pi := &intent{
		amount: 1999, currency: "usd", status: statusSucceeded, customer: "cus_1",
		metadata: map[string]string{"charge_id": "ch_1", "a": "b"}, created: time.Unix(1700000001, 0),
	}
	f.Fuzz(func(t *testing.T, q string) {
		parsed, err := parseSearchQuery(q)
		if err != nil {
			return
		}
		if n := len(parsed.clauses); n == 0 || n > maxClauses {
			t.Fatalf("parseSearchQuery(%q): got %d clauses, want 1-%d", q, n, maxClauses)
		}
		canonical := parsed.String()
		again, err := parseSearchQuery(canonical)
		if err != nil {
			t.Fatalf("parseSearchQuery(%q) = %q, which does not parse: %v", q, canonical, err)
		}
		if got := again.String(); got != canonical {
			t.Fatalf("canonical form of %q: got %q then %q, want a fixed point", q, canonical, got)
		}
		if parsed.match(pi) != again.match(pi) {
			t.Fatalf("%q and its canonical form %q match differently", q, canonical)
		}
	})
}

func FuzzSimMethodID(f *testing.F) {
	for _, s := range []string{
		"pm_sim_approve", "pm_sim_decline_do_not_honor_visa_05_advice_try_again_later",
		"pm_sim_decline_insufficient_funds_mc_51_mac24_card3_exp0130_first2", "pm_sim_processing_decline_lost_card",
		"pm_sim_requires_action_amex", "pm_sim_decline_", "pm_sim_decline_x_advice", "pm_sim_approve_exp1399",
		"pm_sim_decline_card_decline_rate_limit_exceeded", "pm_sim_decline_pin_try_exceeded_visa_75",
		"pm_sim_decline_fraudulent_visa_83", "pm_sim_decline_card_decline_rate_limit_exceeded_visa_05",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		m, err := parseSimMethod(id)
		if err != nil {
			return
		}
		if m.id != id || m.kind == 0 || m.card.brand == "" || len(m.card.last4) != 4 {
			t.Fatalf("parseSimMethod(%q): got %+v, want an id, an outcome and a card", id, m)
		}
		if m.card.expMonth < 1 || m.card.expMonth > 12 {
			t.Fatalf("parseSimMethod(%q): got exp month %d", id, m.card.expMonth)
		}
		if (m.kind == declined || m.settleDecline) && m.decline.code == "" {
			t.Fatalf("parseSimMethod(%q): got a decline without a code", id)
		}
		if m.decline.declineCode == "" && m.decline.code != "" && m.decline.code != "card_decline_rate_limit_exceeded" {
			t.Fatalf("parseSimMethod(%q): got code %q without a decline_code", id, m.decline.code)
		}
		if m.decline.networkAdviceCode != "" && m.card.brand != "mastercard" {
			t.Fatalf("parseSimMethod(%q): got a Mastercard advice code on %s", id, m.card.brand)
		}
	})
}

func FuzzParseScript(f *testing.F) {
	for _, s := range []string{
		`[{"status": 503}]`, `[{"status": 429, "retry_after": "30"}, {"delay_ms": 10}]`,
		`{"steps": [{"drop_response": true}, {"refuse": true}, {"blackhole": true}]}`,
		`[{"status": 500, "after_commit": true}]`, `[{"retry_after": 5}]`, `[{"x": 1}]`, `[]`, `null`,
		`[{"status": 402, "code": "card_decline_rate_limit_exceeded"}]`,
		`[{"status": 402, "decline_code": "insufficient_funds", "network_decline_code": "51", "advice_code": "try_again_later", "drop_response": true}]`,
		`[{"status": 424}, {"status": 424, "after_commit": true}]`, `[{"status": 503, "decline_code": "x"}]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		steps, err := ParseScript([]byte(s))
		if err != nil {
			return
		}
		for i, st := range steps {
			if err := st.Validate(); err != nil {
				t.Fatalf("ParseScript(%q) step %d: accepted an invalid step: %v", s, i, err)
			}
			if st.answers() && (st.DropResponse || st.Refuse || st.Blackhole) {
				t.Fatalf("ParseScript(%q) step %d: accepted conflicting actions", s, i)
			}
			d, declines := st.declines()
			if declines != (st.Status == 402) || declines && (d.code == "" || st.AfterCommit || st.answers()) {
				t.Fatalf("ParseScript(%q) step %d: a 402 step must decline its execution, and only it: %+v", s, i, d)
			}
			if !declines && (st.DeclineCode != "" || st.NetworkDeclineCode != "" || st.AdviceCode != "" || st.NetworkAdviceCode != "") {
				t.Fatalf("ParseScript(%q) step %d: accepted decline fields without status 402", s, i)
			}
		}
	})
}

func FuzzPageToken(f *testing.F) {
	f.Add(pageCursor{created: time.Unix(1700000000, 5), seq: 3}.token())
	f.Add("garbage")
	f.Add("")
	f.Fuzz(func(t *testing.T, tok string) {
		c, ok := parsePageToken(tok)
		if !ok {
			return
		}
		again, ok := parsePageToken(c.token())
		if !ok || !again.created.Equal(c.created) || again.seq != c.seq {
			t.Fatalf("page token %q: got %+v after a round trip, want %+v", tok, again, c)
		}
	})
}
