package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/paygate/paygate/charge"
)

// chargeBody is the JSON body of POST /v1/charges.
type chargeBody struct {
	Amount        json.RawMessage   `json:"amount"`
	Currency      *string           `json:"currency"`
	PaymentMethod *string           `json:"payment_method"`
	Customer      *string           `json:"customer"`
	Reference     *string           `json:"reference"`
	Initiator     *string           `json:"initiator"`
	Reattempt     *string           `json:"reattempt"`
	Metadata      map[string]string `json:"metadata"`
}

// decodeChargeRequest turns a body into a validated charge request. It refuses anything
// that is not exactly one JSON object of known fields, and any card-number-like value
// anywhere in the body, without echoing it.
func decodeChargeRequest(body []byte, scan bodyScan, lim charge.Limits) (charge.Request, *Error) {
	var b chargeBody
	lit, ok := scannedChargeBody(scan, &b)
	if !ok {
		if err := decodeScanned(body, scan, &b); err != nil {
			return charge.Request{}, err
		}
		lit = string(b.Amount)
	}
	var r charge.Request
	if lit == "" || lit == "null" {
		return r, invalid(charge.CodeParameterMissing, "amount", "amount is required")
	}
	// Only a JSON integer literal: not a string, not a fraction, not an exponent.
	amount, err := strconv.ParseInt(lit, 10, 64)
	if err != nil {
		return r, invalid(charge.CodeParameterInvalid, "amount", "amount must be an integer in minor units")
	}
	r.Amount = amount
	r.Currency = deref(b.Currency)
	r.PaymentMethod = deref(b.PaymentMethod)
	r.Customer = deref(b.Customer)
	r.Reference = deref(b.Reference)
	r.Initiator = charge.Initiator(deref(b.Initiator))
	r.ReattemptMode = charge.ReattemptMode(deref(b.Reattempt))
	r.Metadata = b.Metadata
	if err := r.Validate(lim); err != nil {
		var ve *charge.ValidationError
		if errors.As(err, &ve) {
			return r, invalid(ve.Code, ve.Param, ve.Message)
		}
		return r, invalid(charge.CodeParameterInvalid, "", err.Error())
	}
	return r, nil
}

// scannedChargeBody reads into b the body that scan found, when decodeScanned would accept
// it and decode it without a doubt: one JSON object, no card number, no parameter given
// twice, every string valid UTF-8, every key a field of chargeBody as its tag spells it,
// and every value of its field's type (or null). It returns the amount's literal ("" when
// absent), taken from the scan's members without a second reading of the body. ok is false
// for any other body, which decodeScanned reads (and then refuses, or decodes).
func scannedChargeBody(scan bodyScan, b *chargeBody) (amount string, ok bool) {
	if !scan.flat || scan.card || scan.notUTF8 || scan.duplicate {
		return "", false
	}
	for i := range scan.members {
		m := &scan.members[i]
		var field **string
		switch m.key {
		case "amount":
			if m.kind != tokenNumber {
				return "", false
			}
			amount = m.str
			continue
		case "metadata":
			switch {
			case m.kind == tokenNull:
			case m.object:
				pairs := scan.pairs[m.first:m.end]
				b.Metadata = make(map[string]string, len(pairs))
				for _, p := range pairs {
					b.Metadata[p.key] = p.value
				}
			default:
				return "", false
			}
			continue
		case "currency":
			field = &b.Currency
		case "payment_method":
			field = &b.PaymentMethod
		case "customer":
			field = &b.Customer
		case "reference":
			field = &b.Reference
		case "initiator":
			field = &b.Initiator
		case "reattempt":
			field = &b.Reattempt
		default:
			return "", false
		}
		switch m.kind {
		case tokenString:
			*field = &m.str
		case tokenNull:
		default:
			return "", false
		}
	}
	return amount, true
}

// codeDuplicateParameter is the error code of a body that gives one parameter twice.
const codeDuplicateParameter = "duplicate_parameter"

// codeInvalidRequest is the error code of a body holding a string that is not valid UTF-8.
const codeInvalidRequest = "invalid_request"

// decodeStrict decodes exactly one JSON object into v, refusing unknown fields, parameters
// given twice and strings that are not valid UTF-8 (which encoding/json would silently
// replace with U+FFFD, so that distinct values would collide). A body holding a card number
// anywhere is refused first, so that no later error (an unknown or duplicate parameter's
// name, say) can echo one.
func decodeStrict(body []byte, v any) *Error { return decodeScanned(body, scanBody(body), v) }

// decodeScanned is decodeStrict for a body already scanned (scanBody).
func decodeScanned(body []byte, scan bodyScan, v any) *Error {
	if scan.card {
		return errCardData
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return invalid("body_missing", "", "the request body must be a JSON object")
	}
	if trimmed[0] != '{' && json.Valid(trimmed) {
		return invalid(charge.CodeParameterInvalid, "", "the request body must be a JSON object")
	}
	if scan.notUTF8 {
		// Checked before duplicates: encoding/json reads every invalid byte as U+FFFD, so two
		// keys that differ only there would read as one.
		msg := "a string of the request body is not valid UTF-8"
		if scan.notUTF8Param != "" {
			msg = fmt.Sprintf("parameter %s is not valid UTF-8", strconvQuote(scan.notUTF8Param))
		}
		return invalid(codeInvalidRequest, scan.notUTF8Param, msg)
	}
	if scan.duplicate {
		return invalid(codeDuplicateParameter, scan.duplicateParam,
			fmt.Sprintf("parameter %s is given more than once", strconvQuote(scan.duplicateParam)))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field == "":
			return invalid(charge.CodeParameterInvalid, "", "the request body must be a JSON object")
		case errors.As(err, &typeErr):
			return invalid(charge.CodeParameterInvalid, typeErr.Field, fmt.Sprintf("%s has the wrong type", typeErr.Field))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return invalid("parameter_unknown", field, fmt.Sprintf("unknown parameter %q", field))
		default:
			return invalid("invalid_json", "", "the request body is not valid JSON")
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("invalid_json", "", "the request body must hold one JSON object and nothing after it")
	}
	return nil
}

// holdsCardNumber reports whether any key, string or number of the JSON text in body, or
// the raw text of a body that is not one JSON value, looks like a card number.
func holdsCardNumber(body []byte) bool { return scanBody(body).card }

// bodyScan is what one reading of a body's token stream found.
type bodyScan struct {
	// card: a key, string or number looks like a card number; or the body is not one JSON
	// value and its raw text holds one.
	card bool
	// duplicate: the body is one JSON value in which an object gives a key twice;
	// duplicateParam names the first such key in Stripe's form (metadata[key]).
	duplicate      bool
	duplicateParam string
	// notUTF8: the body is one JSON value in which a key or string is not valid UTF-8 (raw
	// invalid bytes, or an escaped surrogate that is not half of a pair); notUTF8Param names
	// the first such value as duplicateParam does, or the object holding such a key ("" at
	// the top level).
	notUTF8      bool
	notUTF8Param string
	// canonical is the body's canonical JSON (idempotency.Canonical) when it is one JSON
	// value; nil otherwise.
	canonical []byte
	// flat: the body is one JSON object whose every value is a string, a number, true,
	// false, null, or an object of strings; members are then its members, in order.
	flat    bool
	members []scanMember
	pairs   []scanPair // the members of the objects among members' values
}

// scanMember is a member of a flat body's object (bodyScan.flat).
type scanMember struct {
	key string
	str string // a string's value; a number's literal
	// kind is the value's; object: the value is an object, whose members are
	// bodyScan.pairs[first:end].
	kind       tokenKind
	object     bool
	first, end int32
}

// scanPair is a member of an object of strings.
type scanPair struct{ key, value string }

// scanFrame is an object or array open at a point of the token stream.
type scanFrame struct {
	object bool
	// seen holds the object's keys so far (folded for the top-level object, see foldName);
	// nil until the first.
	seen map[string]struct{}
	// key is the object's current key; wantKey: the next token is a key.
	key     string
	wantKey bool
	// index is the array's current element.
	index int
}

// scanBody reads the token stream of body once and checks every key, string and number for
// a card number, so that escapes (\u0034...) cannot hide digits and a duplicate key cannot
// hide the value it overrides: every key and value is checked, whichever one a decoder
// keeps. Where the text stops being one JSON value (a syntax error, or a second value after
// the first), the whole raw body is checked too, so that no part a decoder would not reach
// can hide a card number. The same walk tells keys from values and finds an object that
// gives a key twice: at the top level, where keys name the fields of a Go struct, two keys
// are the same when encoding/json would match them to the same field (it ignores case);
// below it (metadata), when they are equal.
func scanBody(body []byte) bodyScan {
	sc := &scanner{body: body, canon: newCanonWriter(len(body))}
	if json.Valid(body) {
		sc.walk()
	} else {
		sc.decode()
	}
	return sc.result()
}

// result is what the scanner found, once it has read the whole body.
func (sc *scanner) result() bodyScan {
	s := sc.s
	if sc.rawChecked || sc.values != 1 {
		// Not one JSON value: the decoder says so.
		s.duplicate, s.duplicateParam = false, ""
		s.notUTF8, s.notUTF8Param = false, ""
	} else if len(sc.stack) == 0 {
		s.canonical = sc.canon.out // complete: not cut off inside an object or array
	}
	if s.flat = s.canonical != nil && !sc.notFlat; !s.flat {
		s.members, s.pairs = nil, nil
	}
	if s.duplicate && charge.ContainsCardNumber(s.duplicateParam) {
		s.card = true // never echoed, even when only the path of keys looks like one
	}
	return s
}

// scanner is one reading of a body's token stream (scanBody).
type scanner struct {
	body       []byte
	dec        *json.Decoder // reads a body that is not one JSON value; nil for one that is (walk)
	s          bodyScan
	stack      []scanFrame
	canon      canonWriter
	values     int  // top-level values begun
	rawChecked bool // the raw body was checked for a card number
	notFlat    bool // a token the members of a flat body cannot hold was read (member)
}

// tokenKind is the kind of a JSON token.
type tokenKind uint8

const (
	tokenDelim tokenKind = iota
	tokenString
	tokenNumber
	tokenBool
	tokenNull
)

// token is one token of a JSON text as json.Decoder.Token reads it with UseNumber: a
// delimiter, a string (a key or a value), a number's literal, true, false or null.
type token struct {
	kind  tokenKind
	delim byte   // tokenDelim: one of {}[]
	str   string // tokenString: the string, unquoted; tokenNumber: the literal
	b     bool   // tokenBool
}

// checkRaw checks the whole raw body for a card number, once: the text is not one JSON value
// from here on.
func (sc *scanner) checkRaw() {
	if !sc.rawChecked {
		sc.rawChecked = true
		sc.s.card = sc.s.card || charge.ContainsCardNumber(string(sc.body))
	}
}

// key is the current key of the innermost open object; "" in an array or at the top level.
func (sc *scanner) key() string {
	if top := sc.top(); top != nil && top.object {
		return top.key
	}
	return ""
}

// top is the innermost open object or array; nil at the top level.
func (sc *scanner) top() *scanFrame {
	if len(sc.stack) == 0 {
		return nil
	}
	return &sc.stack[len(sc.stack)-1]
}

// decode reads the token stream through json.Decoder, to where the text stops being JSON.
func (sc *scanner) decode() {
	sc.dec = json.NewDecoder(bytes.NewReader(sc.body))
	sc.dec.UseNumber()
	for more := true; more; {
		more = sc.next()
	}
}

// next reads one token through the decoder; it reports false at the end of the stream, or
// where the text stops being JSON.
func (sc *scanner) next() bool {
	from := sc.dec.InputOffset()
	tok, err := sc.dec.Token()
	if err == io.EOF {
		return false
	}
	if err != nil {
		sc.checkRaw() // not JSON from here on
		return false
	}
	var t token
	switch v := tok.(type) {
	case string:
		t = token{kind: tokenString, str: v}
	case json.Number:
		t = token{kind: tokenNumber, str: v.String()}
	case bool:
		t = token{kind: tokenBool, b: v}
	case nil:
		t = token{kind: tokenNull}
	case json.Delim:
		t = token{kind: tokenDelim, delim: byte(v)}
	}
	sc.token(t, sc.body[from:sc.dec.InputOffset()])
	return true
}

// walk reads the token stream of a body that json.Valid found to be one JSON value: the
// tokens json.Decoder.Token would read (next), without the decoder's cost for each of them.
func (sc *scanner) walk() {
	b := sc.body
	for i := 0; i < len(b); {
		switch c := b[i]; c {
		case ' ', '\t', '\n', '\r', ',', ':':
			i++
		case '{', '}', '[', ']':
			sc.token(token{kind: tokenDelim, delim: c}, nil)
			i++
		case '"':
			lit := b[i : i+stringLiteralLen(b[i:])]
			sc.token(token{kind: tokenString, str: unquote(lit)}, lit)
			i += len(lit)
		case 't':
			sc.token(token{kind: tokenBool, b: true}, nil)
			i += len("true")
		case 'f':
			sc.token(token{kind: tokenBool}, nil)
			i += len("false")
		case 'n':
			sc.token(token{kind: tokenNull}, nil)
			i += len("null")
		default:
			n := numberLiteralLen(b[i:])
			sc.token(token{kind: tokenNumber, str: string(b[i : i+n])}, nil)
			i += n
		}
	}
}

// member records the token t, read where it is about to be read, among the members of a
// flat body (bodyScan.flat), or notes that the body is not flat.
func (sc *scanner) member(t token) {
	if sc.notFlat {
		return
	}
	switch len(sc.stack) {
	case 0: // the top-level value begins
		sc.notFlat = t.kind != tokenDelim || t.delim != '{'
	case 1: // in the top-level object
		top := &sc.stack[0]
		switch {
		case top.wantKey: // a key, or the closing brace
		case t.kind == tokenDelim && t.delim == '[':
			sc.notFlat = true
		default:
			if sc.s.members == nil {
				sc.s.members = make([]scanMember, 0, 8) // room for every field of a charge
			}
			first := int32(len(sc.s.pairs))
			sc.s.members = append(sc.s.members, scanMember{key: top.key, str: t.str, kind: t.kind, object: t.kind == tokenDelim,
				first: first, end: first})
		}
	case 2: // in an object that is a member's value
		if sc.stack[1].wantKey {
			return // a key, or the closing brace
		}
		if t.kind != tokenString {
			sc.notFlat = true
			return
		}
		sc.s.pairs = append(sc.s.pairs, scanPair{key: sc.stack[1].key, value: t.str})
		sc.s.members[len(sc.s.members)-1].end = int32(len(sc.s.pairs))
	default:
		sc.notFlat = true
	}
}

// stringLiteralLen is the length of the valid JSON string literal at the start of b, quotes
// included.
func stringLiteralLen(b []byte) int {
	for i := 1; ; i++ {
		switch b[i] {
		case '\\':
			i++ // the escaped byte; of a \uXXXX, the u (its hexadecimal digits hold no quote)
		case '"':
			return i + 1
		}
	}
}

// numberLiteralLen is the length of the valid JSON number literal at the start of b.
func numberLiteralLen(b []byte) int {
	for i, c := range b {
		if !('0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			return i
		}
	}
	return len(b)
}

// unquote is the string of the valid JSON string literal lit as encoding/json decodes it:
// escapes decoded, and each invalid UTF-8 byte or lone surrogate read as U+FFFD.
func unquote(lit []byte) string {
	if raw := lit[1 : len(lit)-1]; bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		if s, ok := knownStrings[string(raw)]; ok {
			return s
		}
		return string(raw)
	}
	var s string
	_ = json.Unmarshal(lit, &s) // valid: it cannot fail
	return s
}

// knownStrings are the strings nearly every charge body holds: its fields' names, the
// initiators and the reattempt modes. unquote returns them without a copy.
var knownStrings = func() map[string]string {
	m := make(map[string]string)
	for _, s := range []string{
		"amount", "currency", "payment_method", "customer", "reference", "initiator", "reattempt", "metadata",
		string(charge.InitiatorCustomer), string(charge.InitiatorMerchant),
		string(charge.ReattemptManual), string(charge.ReattemptAuto),
	} {
		m[s] = s
	}
	return m
}()

// token reads one token t, whose text (a string's literal, quotes included, at its end) is
// text.
func (sc *scanner) token(t token, text []byte) {
	if sc.top() == nil {
		if sc.values++; sc.values > 1 {
			sc.checkRaw() // a second value: the decoder would stop before it
		}
	}
	sc.member(t)
	switch t.kind {
	case tokenString:
		if sc.str(t.str, text) {
			return // a key: its value follows
		}
		sc.canon.str(sc.key(), t.str)
	case tokenNumber:
		sc.s.card = sc.s.card || charge.ContainsCardNumber(t.str)
		sc.canon.literal(sc.key(), t.str)
	case tokenBool:
		sc.canon.literal(sc.key(), strconv.FormatBool(t.b))
	case tokenNull:
		sc.canon.literal(sc.key(), "null")
	case tokenDelim:
		if t.delim == '{' || t.delim == '[' {
			sc.canon.open(t.delim == '{', sc.key())
			sc.stack = append(sc.stack, scanFrame{object: t.delim == '{', wantKey: t.delim == '{'})
			return // the value ends with its closing delimiter
		}
		sc.stack = sc.stack[:len(sc.stack)-1]
		sc.canon.close(sc.key())
	}
	// A value ended: the next token of its container is a key, or the next element.
	if top := sc.top(); top != nil {
		if top.object {
			top.wantKey = true
		} else {
			top.index++
		}
	}
}

// str checks the string t, whose literal is at the end of text, and reports whether it is an
// object's key.
func (sc *scanner) str(t string, text []byte) bool {
	s := &sc.s
	s.card = s.card || charge.ContainsCardNumber(t)
	top := sc.top()
	isKey := top != nil && top.object && top.wantKey
	if !s.notUTF8 && !validUTF8Literal(text) {
		s.notUTF8 = true
		if isKey {
			s.notUTF8Param = paramPath(sc.stack[:len(sc.stack)-1])
		} else {
			s.notUTF8Param = paramPath(sc.stack)
		}
	}
	if !isKey {
		return false
	}
	top.key, top.wantKey = t, false
	if !s.duplicate && seenKey(top, t, len(sc.stack) == 1) {
		s.duplicate, s.duplicateParam = true, paramPath(sc.stack)
	}
	return true
}

// validUTF8Literal reports whether the JSON string literal at the end of text (text holds
// what the decoder read for one token: the whitespace, comma or colon before it, then the
// literal, quotes included) is valid UTF-8 once decoded: no invalid byte, and every escaped
// UTF-16 surrogate half of a pair.
func validUTF8Literal(text []byte) bool {
	lit := text[bytes.IndexByte(text, '"'):]
	if !utf8.Valid(lit) {
		return false
	}
	for i := 0; i < len(lit); i++ {
		if lit[i] != '\\' {
			continue
		}
		i++
		if lit[i] != 'u' {
			continue
		}
		r := hex4(lit[i+1 : i+5])
		i += 4
		switch {
		case utf16.IsSurrogate(r) && r < 0xdc00: // a high surrogate: a low one must follow
			if i+6 >= len(lit) || lit[i+1] != '\\' || lit[i+2] != 'u' {
				return false
			}
			if lo := hex4(lit[i+3 : i+7]); lo < 0xdc00 || lo > 0xdfff {
				return false
			}
			i += 6
		case utf16.IsSurrogate(r): // a low surrogate alone
			return false
		}
	}
	return true
}

// hex4 returns the value of four hexadecimal digits (the decoder has checked them).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= 'a':
			r |= rune(c-'a') + 10
		case c >= 'A':
			r |= rune(c-'A') + 10
		default:
			r |= rune(c - '0')
		}
	}
	return r
}

// seenKey records key in object f and reports whether f already had it; fold compares keys
// as encoding/json matches them to struct fields.
func seenKey(f *scanFrame, key string, fold bool) bool {
	if fold {
		key = foldName(key)
	}
	if _, ok := f.seen[key]; ok {
		return true
	}
	if f.seen == nil {
		f.seen = make(map[string]struct{})
	}
	f.seen[key] = struct{}{}
	return false
}

// paramPath names the current key of the innermost object in stack in Stripe's form:
// "amount", "metadata[key]", "a[b][0][c]".
func paramPath(stack []scanFrame) string {
	var b strings.Builder
	for i, f := range stack {
		var part string
		if f.object {
			part = f.key
		} else {
			part = strconv.Itoa(f.index)
		}
		if i == 0 && f.object {
			b.WriteString(part)
			continue
		}
		b.WriteString("[" + part + "]")
	}
	return b.String()
}

// foldName folds name so that two names fold alike exactly when encoding/json takes them
// for the same struct field (it compares them with bytes.EqualFold): each rune becomes one
// rune of its Unicode case-folding orbit (foldRune). A name in lowercase ASCII, as a body's
// keys mostly are, is its own fold, and costs no copy.
func foldName(name string) string { return strings.Map(foldRune, name) }

// foldRune returns the rune that stands for the case-folding orbit of r: the orbit's
// lowercase ASCII letter when it holds one (k for K, k and the Kelvin sign), else its
// smallest rune.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return r
	}
	least := r
	for next := unicode.SimpleFold(r); next != r; next = unicode.SimpleFold(next) {
		if next < utf8.RuneSelf {
			return foldRune(next)
		}
		least = min(least, next)
	}
	return least
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
