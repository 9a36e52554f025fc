package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/idempotency"
)

var lim = charge.Limits{MaxAmount: 99_999_999}

func TestDecodeChargeRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		wantCode   string
	}{
		{"valid", `{"amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`, ""},
		{"valid merchant auto", `{"amount":1,"currency":"eur","payment_method":"pm_x","customer":"cus_1","initiator":"merchant","reattempt":"auto","reference":"r","metadata":{"a":"b"}}`, ""},
		{"missing amount", `{"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`, "parameter_missing"},
		{"null amount", `{"amount":null,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`, "parameter_missing"},
		{"string amount", `{"amount":"1000","currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`, "parameter_invalid"},
		{"exponent amount", `{"amount":1e3,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`, "parameter_invalid"},
		{"huge amount", `{"amount":99999999999999999999,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`, "parameter_invalid"},
		{"metadata not strings", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"a":1}}`, "parameter_invalid"},
		{"card in key", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"4242424242424242":"x"}}`, "card_data_not_accepted"},
		{"card as number", `{"amount":4242424242424242,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`, "card_data_not_accepted"},
		{"not an object", `"hello"`, "parameter_invalid"},
		{"array", `[]`, "parameter_invalid"},
		{"null", `null`, "parameter_invalid"},
		{"card behind a duplicate metadata key", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"n":"4242424242424242","n":"x"}}`, "card_data_not_accepted"},
		{"card behind a duplicate field", `{"reference":"4242424242424242","amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","reference":"r"}`, "card_data_not_accepted"},
		{"card behind a duplicate object", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"a":"4242 4242 4242 4242"},"metadata":{}}`, "card_data_not_accepted"},
		{"card after the object", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"} "4242424242424242"`, "card_data_not_accepted"},
		{"card as an unknown field's name", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","4111111111111111":"x"}`, "card_data_not_accepted"},
		{"card with double spaces", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"n":"4242  4242  4242  4242"}}`, "card_data_not_accepted"},
		{"NUL in metadata value", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"a":"x\u0000y"}}`, "parameter_invalid"},
		{"duplicate amount", `{"amount":5000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","amount":1000}`, "duplicate_parameter"},
		{"duplicate amount in another case", `{"amount":5000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","Amount":1000}`, "duplicate_parameter"},
		{"duplicate metadata key", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"a":"1","a":"2"}}`, "duplicate_parameter"},
		{"duplicate metadata", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"a":"1"},"metadata":{}}`, "duplicate_parameter"},
		{"card after a duplicate key", `{"amount":1,"amount":2,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"a":"4242424242424242"}}`, "card_data_not_accepted"},
		{"card in invalid JSON", `{"amount":1,"currency":"usd",,"metadata":{"a":"4242424242424242"}}`, "card_data_not_accepted"},
		{"card with Unicode separators", "{\"amount\":1,\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\",\"initiator\":\"customer\",\"metadata\":{\"a\":\"4242\u30004242\u20134242\u20144242\"}}", "card_data_not_accepted"},
		{"card with zero width spaces", "{\"amount\":1,\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\",\"initiator\":\"customer\",\"metadata\":{\"a\":\"4242\u200b4242\u200b4242\u200b4242\"}}", "card_data_not_accepted"},
		{"card with escaped zero width spaces", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","reference":"4242\u200b4242\u200b4242\u200b4242"}`, "card_data_not_accepted"},
		{"card in fullwidth digits", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","reference":"４２４２４２４２４２４２４２４２"}`, "card_data_not_accepted"},
		{"card in escaped fullwidth digits", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","reference":"\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12"}`, "card_data_not_accepted"},
		{"card in Arabic-Indic digits", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"n":"٤٢٤٢٤٢٤٢٤٢٤٢٤٢٤٢"}}`, "card_data_not_accepted"},
		{"card in Devanagari digits as a key", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"४२४२ ४२४२ ४२४२ ४२४२":"x"}}`, "card_data_not_accepted"},
		{"card grouped by commas", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"note":"4242,4242,4242,4242"}}`, "card_data_not_accepted"},
		{"card grouped by plus signs", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"note":"4242+4242+4242+4242"}}`, "card_data_not_accepted"},
		{"card grouped by colons", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"note":"4242:4242:4242:4242"}}`, "card_data_not_accepted"},
		{"card in fullwidth digits in invalid JSON", `{"amount":1,,"reference":"４２４２４２４２４２４２４２４２"`, "card_data_not_accepted"},
		{"NUL in metadata key", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"a\u0000":"x"}}`, "parameter_invalid"},
	} {
		_, err := decodeChargeRequest([]byte(tc.body), scanBody([]byte(tc.body)), lim)
		switch {
		case tc.wantCode == "" && err != nil:
			t.Errorf("%s: got %v, want valid", tc.name, err)
		case tc.wantCode != "" && (err == nil || err.Code != tc.wantCode):
			t.Errorf("%s: got %v, want %s", tc.name, err, tc.wantCode)
		}
	}
}

// TestDecodeNotUTF8: a string that is not valid UTF-8 (raw invalid bytes, or an escaped
// surrogate without its other half) is refused with 400 invalid_request naming the
// parameter, never read with U+FFFD in place of what it holds: "caf\xe9" and "caf\xe8"
// would be one reference.
func TestDecodeNotUTF8(t *testing.T) {
	t.Parallel()
	const head = `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer",`
	for _, tc := range []struct {
		name, body string
		wantParam  string // "-": accepted
	}{
		{"Latin-1 byte in the reference", head + "\"reference\":\"caf\xe9-T\"}", "reference"},
		{"another one", head + "\"reference\":\"caf\xe8-T\"}", "reference"},
		{"truncated sequence in a metadata value", head + "\"metadata\":{\"note\":\"x\xe2\x82\"}}", "metadata[note]"},
		{"invalid metadata key", head + "\"metadata\":{\"n\xff\":\"x\"}}", "metadata"},
		{"invalid top-level key", head + "\"\xc0\xaf\":\"x\"}", ""},
		{"encoded surrogate", head + "\"reference\":\"\xed\xa0\x80\"}", "reference"},
		{"escaped lone high surrogate", head + `"reference":"caf\ud800-T"}`, "reference"},
		{"escaped high surrogate at the end", head + `"reference":"caf\ud800"}`, "reference"},
		{"escaped high surrogate before another high one", head + `"reference":"\ud800\ud800"}`, "reference"},
		{"escaped lone low surrogate", head + `"metadata":{"a":"\udc00"}}`, "metadata[a]"},
		{"escaped surrogate pair", head + `"reference":"\ud83d\ude00"}`, "-"},
		{"escaped backslash before u", head + `"reference":"\\ud800"}`, "-"},
		{"valid UTF-8", head + `"reference":"café-T ４２ 日本"}`, "-"},
		{"escaped replacement character", head + `"reference":"caf\ufffd"}`, "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := decodeChargeRequest([]byte(tc.body), scanBody([]byte(tc.body)), lim)
			switch {
			case tc.wantParam == "-" && err != nil:
				t.Fatalf("got %v, want the request accepted", err)
			case tc.wantParam == "-":
			case err == nil || err.Status != 400 || err.Code != "invalid_request" || err.Param != tc.wantParam:
				t.Fatalf("got %+v, want 400 invalid_request with param %q", err, tc.wantParam)
			case !utf8.ValidString(err.Message):
				t.Fatalf("the message %q is not valid UTF-8", err.Message)
			}
		})
	}
}

// FuzzDecodeChargeRequest: whatever the body, the decoder answers a 4xx error or a request
// that is valid and holds no card number.
// FuzzDuplicateKey: a key given twice in one object is refused wherever the object is, and
// is named without echoing a card number.
func FuzzDuplicateKey(f *testing.F) {
	f.Add("amount", "1", "2", false)
	f.Add("n", `"a"`, `"b"`, true)
	f.Add("4242 4242 4242 4242", `"a"`, `"b"`, true)
	f.Add("", "{}", "[]", true)
	f.Fuzz(func(t *testing.T, key, v1, v2 string, inMetadata bool) {
		if !json.Valid([]byte(v1)) || !json.Valid([]byte(v2)) {
			return
		}
		k, _ := json.Marshal(key)
		obj := "{" + string(k) + ":" + v1 + "," + string(k) + ":" + v2 + "}"
		body := obj
		if inMetadata {
			body = `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":` + obj + "}"
		}
		_, err := decodeChargeRequest([]byte(body), scanBody([]byte(body)), lim)
		switch {
		case err == nil:
			t.Fatalf("accepted %s", body)
		case err.Code == charge.CodeCardData:
		case err.Code == codeInvalidRequest && (!utf8.ValidString(body) || strings.Contains(body, `\u`)):
			// A value that is not UTF-8 is refused first.
		case err.Code != codeDuplicateParameter:
			t.Fatalf("%s: got %v, want %s", body, err, codeDuplicateParameter)
		case charge.ContainsCardNumber(err.Param + err.Message):
			t.Fatalf("%s: the error echoes a card number: %+v", body, err)
		}
	})
}

// duplicateKeySlowly is the plain reading of a duplicate key, for the fuzzers to compare
// with scanBody: it parses the one JSON value in body recursively and compares each object's
// keys pairwise (ignoring case at the top level, as encoding/json does for struct fields).
// ok is false when body is not one JSON value.
func duplicateKeySlowly(body []byte) (dup, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var value func(depth int)
	value = func(depth int) {
		tok, err := dec.Token()
		if err != nil {
			panic(err)
		}
		switch tok {
		case json.Delim('{'):
			var keys []string
			for dec.More() {
				tok, err := dec.Token()
				if err != nil {
					panic(err)
				}
				k := tok.(string)
				for _, seen := range keys {
					if seen == k || (depth == 0 && strings.EqualFold(seen, k)) {
						dup = true
					}
				}
				keys = append(keys, k)
				value(depth + 1)
			}
			_, _ = dec.Token()
		case json.Delim('['):
			for dec.More() {
				value(depth + 1)
			}
			_, _ = dec.Token()
		}
	}
	if !json.Valid(body) {
		return false, false
	}
	value(0)
	return dup, true
}

func FuzzDecodeChargeRequest(f *testing.F) {
	for _, s := range []string{
		`{"amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`,
		`{"amount":1,"currency":"eur","payment_method":"pm_x","customer":"cus_1","initiator":"merchant","reattempt":"auto","metadata":{"a":"b"}}`,
		`{"amount":-1}`, `[]`, `null`, `{"metadata":{"n":"4242 4242 4242 4242"}}`, `{"amount":1e400}`, "",
		`{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","amount":2}`,
		`{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","Amount":2}`,
		`{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"a":"1","a":"2"}}`,
		`{"amount":1,"currency":"usd",,"metadata":{"a":"4242/4242/4242/4242"}}`, `{"a":1} 4242 4242 4242 4242`,
		"{\"metadata\":{\"n\":\"4242\u00a04242\u20134242\u30004242\"}}",
		`{"reference":"４２４２４２４２４２４２４２４２"}`, `{"metadata":{"n":"٤٢٤٢٬٤٢٤٢٬٤٢٤٢٬٤٢٤٢"}}`, `{"metadata":{"n":"४२४२ ४२४२ ४२४२ ४२४२"}}`,
		`{"reference":"\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12"}`,
		"{\"reference\":\"caf\xe9-T\"}", `{"reference":"caf\ud800-T"}`, "{\"metadata\":{\"n\xff\":\"x\"}}",
		`{"metadata":{"note":"4242,4242,4242,4242"}}`, `{"metadata":{"note":"4242+4242:4242;4242"}}`, `{"a":1} ４２４２，４２４２，４２４２，４２４２`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := decodeChargeRequest(body, scanBody(body), lim)
		// Where the text is not one JSON value, no card number in its raw text gets through.
		if !json.Valid(body) && charge.ContainsCardNumber(string(body)) && (err == nil || err.Code != charge.CodeCardData) {
			t.Fatalf("card number in a body that is not JSON: got %v, want %s", err, charge.CodeCardData)
		}
		if dup, _ := duplicateKeySlowly(body); dup && bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
			// A string that is not UTF-8 (raw, or an escaped lone surrogate) is refused first.
			notUTF8 := err != nil && err.Code == codeInvalidRequest && (!utf8.Valid(body) || bytes.Contains(body, []byte(`\u`)))
			if err == nil || (err.Code != codeDuplicateParameter && err.Code != charge.CodeCardData && !notUTF8) {
				t.Fatalf("object with a duplicate key: got %v, want %s", err, codeDuplicateParameter)
			}
		}
		// A string that is not UTF-8 is never read as another one.
		if json.Valid(body) && !utf8.Valid(body) && err == nil {
			t.Fatalf("accepted a body that is not UTF-8: %q", body)
		}
		if err != nil {
			if err.Status < 400 || err.Status > 499 || err.Code == "" || err.Message == "" {
				t.Fatalf("decode error outside the 4xx envelope: %+v", err)
			}
			if err.Code == codeDuplicateParameter && charge.ContainsCardNumber(err.Param+err.Message) {
				t.Fatalf("duplicate parameter error echoes a card number: %+v", err)
			}
			return
		}
		if dup, ok := duplicateKeySlowly(body); !ok || dup {
			t.Fatalf("accepted a body with a duplicate key (or not JSON): %q", body)
		}
		if verr := r.Validate(lim); verr != nil {
			t.Fatalf("accepted an invalid request: %v", verr)
		}
		b, _ := json.Marshal(r)
		if holdsCardNumber(b) || charge.ContainsCardNumber(r.PaymentMethod) {
			t.Fatalf("accepted card data: %s", b)
		}
	})
}

// FuzzCanonicalScan: the canonical JSON scanBody builds on its way is exactly
// idempotency.Canonical's, and exists exactly when the body is one JSON value, so that a
// fingerprint taken from the scan is the fingerprint of the body.
func FuzzCanonicalScan(f *testing.F) {
	for _, s := range []string{
		`{"amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`,
		`{"b":1,"a":{"z":[1,{"y":2,"x":[]},"s"],"a":null},"A":true,"c":false}`,
		`{"a":1,"a":{"b":2}}`, `[1,[2,[3]],{}]`, `"\u2028\u00e9\b\f<>&\"\\\u0001"`, "\"\xff\xfe\"",
		`{"amount":1e400,"x":-0.5E+3}`, `{} {}`, `{"a":`, " 12 ", `null`, `{"\ud800":1}`, `{"a":"x","A":"y"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if len(bytes.TrimSpace([]byte(body))) == 0 {
			return // Canonical's null for no body is the caller's: there is no value to scan
		}
		want, err := idempotency.Canonical([]byte(body))
		got := scanBody([]byte(body)).canonical
		switch {
		case err != nil && got != nil:
			t.Fatalf("%q: canonical %s from a body that is not one JSON value (%v)", body, got, err)
		case err == nil && got == nil:
			t.Fatalf("%q: no canonical form, want %s", body, want)
		case err == nil && !bytes.Equal(got, want):
			t.Fatalf("%q: canonical\n got  %s\n want %s", body, got, want)
		}
	})
}

// FuzzScanWalk: the scan of a body that is one JSON value, which walks its text, finds what
// the reading of its tokens through json.Decoder finds.
func FuzzScanWalk(f *testing.F) {
	for _, s := range []string{
		`{"amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`,
		`{"amount":1,"currency":"eur","payment_method":"pm_x","customer":"cus_1","initiator":"merchant","reattempt":"auto","metadata":{"a":"b"}}`,
		`{"b":1,"a":{"z":[1,{"y":2,"x":[]},"s"],"a":null},"A":true,"c":false}`, ` [ 1 , -0.5E+3 , 1e400 ] `,
		`{"a":1,"a":{"b":2}}`, `{"a":"x","A":"y"}`, `"\u2028\u00e9\b\f<>&\"\\\u0001"`, "\"\xff\xfe\"", `{"\ud800":1}`,
		`{"reference":"caf\ud800-T"}`, "{\"metadata\":{\"n\xff\":\"x\"}}", `{"metadata":{"n":"4242\u00a04242\u20134242\u30004242"}}`,
		`{"amount":4242424242424242}`, `{"4242 4242 4242 4242":1,"4242 4242 4242 4242":2}`, `{"\\":"\/"}`, `{} {}`, `{"a":`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) {
			return
		}
		sc := &scanner{body: body}
		sc.decode()
		want := sc.result()
		if got := scanBody(body); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got  %+v\n want %+v", body, got, want)
		}
	})
}

// FuzzScannedChargeBody: a charge body read from its scan (scannedChargeBody) is the one
// the decoder reads, and only a body the decoder accepts is read so.
func FuzzScannedChargeBody(f *testing.F) {
	for _, s := range []string{
		`{"amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`,
		`{"amount":1,"currency":"eur","payment_method":"pm_x","customer":"cus_1","initiator":"merchant","reattempt":"auto","reference":"r","metadata":{"a":"b","c":""}}`,
		`{"amount":null,"currency":null,"metadata":null}`, `{"metadata":{}}`, `{}`, `{"amount":"1"}`, `{"Amount":1}`,
		`{"amount":1e3,"reference":"\u00e9\ud83d\ude00"}`, `{"metadata":{"a":1}}`, `{"metadata":{"a":{}}}`, `{"metadata":[]}`,
		`{"currency":true}`, `{"currency":{}}`, `{"extra":"x"}`, `[1]`, `"x"`, `{"amount":1}{}`, `{"amount":1,"amount":2}`,
		"{\"reference\":\"caf\xe9\"}", `{"metadata":{"n":"4242 4242 4242 4242"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		scan := scanBody(body)
		var got chargeBody
		amount, ok := scannedChargeBody(scan, &got)
		if !ok {
			return
		}
		var want chargeBody
		if err := decodeScanned(body, scan, &want); err != nil {
			t.Fatalf("%q: read from the scan, refused by the decoder: %v", body, err)
		}
		if amount != string(want.Amount) {
			t.Fatalf("%q: amount %q, the decoder's %q", body, amount, want.Amount)
		}
		want.Amount = nil
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got  %s\n want %s", body, fmtChargeBody(got), fmtChargeBody(want))
		}
	})
}

// fmtChargeBody shows b with the values its pointers point to.
func fmtChargeBody(b chargeBody) string {
	s := func(p *string) string {
		if p == nil {
			return "nil"
		}
		return strconvQuote(*p)
	}
	return "currency=" + s(b.Currency) + " payment_method=" + s(b.PaymentMethod) + " customer=" + s(b.Customer) +
		" reference=" + s(b.Reference) + " initiator=" + s(b.Initiator) + " reattempt=" + s(b.Reattempt) +
		" metadata=" + fmt.Sprintf("%#v", b.Metadata)
}

// TestFoldRuneOrbits: two runes fold alike (foldRune) exactly when they share a Unicode
// case-folding orbit: every rune folds as the next of its orbit does (SimpleFold walks the
// orbit round), to a rune of that orbit.
func TestFoldRuneOrbits(t *testing.T) {
	t.Parallel()
	smallest := func(r rune) rune { // the smallest rune of r's orbit
		for {
			next := unicode.SimpleFold(r)
			if next <= r {
				return next
			}
			r = next
		}
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		f := foldRune(r)
		if next := foldRune(unicode.SimpleFold(r)); next != f {
			t.Fatalf("%U folds to %U, %U of its orbit to %U", r, f, unicode.SimpleFold(r), next)
		}
		if smallest(f) != smallest(r) {
			t.Fatalf("%U folds to %U, of another orbit", r, f)
		}
	}
	if got := foldName("payment_method"); got != "payment_method" {
		t.Fatalf("got %q, want the name itself", got)
	}
}
