package processor

import (
	"encoding/json"
	"strings"
	"testing"
)

// unquoteClause reads a single-quoted string of the query language from the start of s and
// returns its value and the rest of s.
func unquoteClause(s string) (value, rest string, ok bool) {
	if !strings.HasPrefix(s, "'") {
		return "", "", false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 >= len(s) {
				return "", "", false
			}
			i++
			b.WriteByte(s[i])
		case '\'':
			return b.String(), s[i+1:], true
		default:
			b.WriteByte(s[i])
		}
	}
	return "", "", false
}

// FuzzMetadataQuery checks that any key and value survive quoting: the clause reads back as
// exactly one metadata clause with the same key and value.
func FuzzMetadataQuery(f *testing.F) {
	for _, s := range [][2]string{
		{MetadataChargeID, "ch_abc"}, {"k", `it's`}, {"k", `back\slash`}, {"k", `\'`}, {"", ""}, {"k", "ch_x' OR status:'succeeded"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		q := MetadataQuery(key, value)
		rest, ok := strings.CutPrefix(q, "metadata[")
		if !ok {
			t.Fatalf("%q: no metadata[ prefix", q)
		}
		gotKey, rest, ok := unquoteClause(rest)
		if !ok || gotKey != key {
			t.Fatalf("%q: key: got %q (ok %v), want %q", q, gotKey, ok, key)
		}
		rest, ok = strings.CutPrefix(rest, "]:")
		if !ok {
			t.Fatalf("%q: no ]: after the key", q)
		}
		gotValue, rest, ok := unquoteClause(rest)
		if !ok || gotValue != value || rest != "" {
			t.Fatalf("%q: value: got %q rest %q (ok %v), want %q and nothing after", q, gotValue, rest, ok, value)
		}
	})
}

// FuzzLastPaymentErrors checks the reader of list and search answers: it never panics, and
// every body it returns is an error envelope declineOf can read, keyed by an id of the input.
func FuzzLastPaymentErrors(f *testing.F) {
	for _, s := range []string{
		`{"object":"list","data":[{"id":"pi_1","last_payment_error":{"code":"card_declined","decline_code":"do_not_honor","network_decline_code":"05","advice_code":"try_again_later","network_advice_code":"24"}}]}`,
		`{"data":[{"id":"pi_1","last_payment_error":null},{"id":"pi_2"}]}`,
		`{"data":[{"id":""},{"last_payment_error":{}}]}`,
		`{"data":null}`, `{"data":[1,"x",null]}`, `[]`, `null`, ``, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got := lastPaymentErrors(raw)
		for id, body := range got {
			if id == "" {
				t.Fatal("an empty id")
			}
			if !strings.Contains(string(raw), id) && !json.Valid(raw) {
				t.Fatalf("id %q is not from the input", id)
			}
			var env struct {
				Error json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(body, &env); err != nil {
				t.Fatalf("body %q: not an error envelope: %v", body, err)
			}
			var nf newerErrorFields
			_ = json.Unmarshal(body, &nf)
		}
	})
}
