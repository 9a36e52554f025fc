package sim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// searchQuery is a parsed query of Stripe's search language, restricted to
// the fields PaymentIntents support: amount, created, currency, customer,
// metadata['key'] and status.
type searchQuery struct {
	clauses []clause
	or      bool // clauses joined by OR; otherwise AND
}

// clause is one term: [-]field op value.
type clause struct {
	negate bool
	field  string // amount, created, currency, customer, metadata, status
	key    string // the metadata key
	op     string // ":", "~", ">", "<", ">=", "<="
	value  string
	null   bool // the value is the keyword null
}

const maxClauses = 10

var searchFields = map[string]bool{
	"amount": true, "created": true, "currency": true, "customer": true, "metadata": true, "status": true,
}

func isNumericField(f string) bool { return f == "amount" || f == "created" }

// parseSearchQuery parses q. Clauses are separated by whitespace or the
// keywords AND or OR (in any case), which cannot be mixed; string values are
// quoted with ' or " (a backslash escapes the quote); numbers are bare.
func parseSearchQuery(q string) (searchQuery, error) {
	p := queryParser{s: q}
	var out searchQuery
	sawAnd, sawOr := false, false
	for {
		p.space()
		if p.eof() {
			break
		}
		if len(out.clauses) > 0 {
			switch kw := p.keyword(); kw {
			case "AND":
				sawAnd = true
			case "OR":
				sawOr = true
			}
			p.space()
			if p.eof() {
				return searchQuery{}, errors.New("the query ends after AND or OR")
			}
		}
		c, err := p.clause()
		if err != nil {
			return searchQuery{}, err
		}
		out.clauses = append(out.clauses, c)
		if len(out.clauses) > maxClauses {
			return searchQuery{}, fmt.Errorf("a query can have at most %d clauses", maxClauses)
		}
		if !p.eof() && !p.atSpace() {
			return searchQuery{}, fmt.Errorf("unexpected %q at position %d", p.s[p.i], p.i)
		}
	}
	if len(out.clauses) == 0 {
		return searchQuery{}, errors.New("the query is empty")
	}
	if sawAnd && sawOr {
		return searchQuery{}, errors.New("a query cannot mix AND and OR")
	}
	out.or = sawOr
	return out, nil
}

type queryParser struct {
	s string
	i int
}

func (p *queryParser) eof() bool { return p.i >= len(p.s) }

func (p *queryParser) atSpace() bool { return !p.eof() && isSpace(p.s[p.i]) }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (p *queryParser) space() {
	for p.atSpace() {
		p.i++
	}
}

// keyword consumes AND or OR followed by whitespace, returning it in upper
// case; otherwise it consumes nothing and returns "".
func (p *queryParser) keyword() string {
	for _, kw := range []string{"AND", "OR"} {
		end := p.i + len(kw)
		if end < len(p.s) && strings.EqualFold(p.s[p.i:end], kw) && isSpace(p.s[end]) {
			p.i = end
			return kw
		}
	}
	return ""
}

func (p *queryParser) clause() (clause, error) {
	var c clause
	if !p.eof() && p.s[p.i] == '-' {
		c.negate = true
		p.i++
	}
	start := p.i
	for !p.eof() && (p.s[p.i] >= 'a' && p.s[p.i] <= 'z' || p.s[p.i] == '_') {
		p.i++
	}
	c.field = p.s[start:p.i]
	if c.field == "" {
		return c, fmt.Errorf("expected a field name at position %d", start)
	}
	if !searchFields[c.field] {
		return c, fmt.Errorf("field %q is not a supported search field for payment_intents", c.field)
	}
	if c.field == "metadata" {
		if p.eof() || p.s[p.i] != '[' {
			return c, errors.New("metadata needs a key: metadata['key']")
		}
		p.i++
		key, err := p.quoted()
		if err != nil {
			return c, err
		}
		if key == "" {
			return c, errors.New("the metadata key is empty")
		}
		if p.eof() || p.s[p.i] != ']' {
			return c, errors.New("expected ] after the metadata key")
		}
		p.i++
		c.key = key
	}
	for _, op := range []string{">=", "<=", ":", "~", ">", "<"} {
		if strings.HasPrefix(p.s[p.i:], op) {
			c.op = op
			p.i += len(op)
			break
		}
	}
	switch {
	case c.op == "":
		return c, fmt.Errorf("expected an operator after %s", c.field)
	case isNumericField(c.field) && c.op == "~":
		return c, fmt.Errorf("%s does not support ~", c.field)
	case !isNumericField(c.field) && c.op != ":" && c.op != "~":
		return c, fmt.Errorf("%s supports only : and ~", c.field)
	}
	if p.eof() {
		return c, fmt.Errorf("expected a value after %s%s", c.field, c.op)
	}
	switch q := p.s[p.i]; {
	case q == '\'' || q == '"':
		v, err := p.quoted()
		if err != nil {
			return c, err
		}
		c.value = v
	default:
		start := p.i
		for !p.eof() && !isSpace(p.s[p.i]) {
			p.i++
		}
		v := p.s[start:p.i]
		switch {
		case v == "null" && c.op == ":":
			c.null = true
		case isNumericField(c.field):
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				return c, fmt.Errorf("%s needs an integer, got %q", c.field, v)
			}
			c.value = v
		default:
			return c, fmt.Errorf("the value of %s must be quoted", c.field)
		}
	}
	if isNumericField(c.field) && !c.null {
		if _, err := strconv.ParseInt(c.value, 10, 64); err != nil {
			return c, fmt.Errorf("%s needs an integer, got %q", c.field, c.value)
		}
	}
	if c.op == "~" && len(c.value) < 3 {
		return c, errors.New("~ needs at least three characters")
	}
	return c, nil
}

// quoted reads a '...' or "..." string; a backslash escapes the next byte.
func (p *queryParser) quoted() (string, error) {
	if p.eof() || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", fmt.Errorf("expected a quoted string at position %d", p.i)
	}
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for !p.eof() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\' && !p.eof():
			b.WriteByte(p.s[p.i])
			p.i++
		case c == q:
			return b.String(), nil
		default:
			b.WriteByte(c)
		}
	}
	return "", errors.New("unterminated string")
}

// String renders q in canonical form; parsing it gives q back.
func (q searchQuery) String() string {
	sep := " AND "
	if q.or {
		sep = " OR "
	}
	parts := make([]string, len(q.clauses))
	for i, c := range q.clauses {
		parts[i] = c.String()
	}
	return strings.Join(parts, sep)
}

func (c clause) String() string {
	var b strings.Builder
	if c.negate {
		b.WriteByte('-')
	}
	b.WriteString(c.field)
	if c.field == "metadata" {
		b.WriteString("[" + quote(c.key) + "]")
	}
	b.WriteString(c.op)
	switch {
	case c.null:
		b.WriteString("null")
	case isNumericField(c.field):
		b.WriteString(c.value)
	default:
		b.WriteString(quote(c.value))
	}
	return b.String()
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('\'')
	return b.String()
}

// match reports whether pi satisfies q.
func (q searchQuery) match(pi *intent) bool {
	for _, c := range q.clauses {
		ok := c.match(pi)
		if q.or && ok {
			return true
		}
		if !q.or && !ok {
			return false
		}
	}
	return !q.or
}

func (c clause) match(pi *intent) bool {
	var ok bool
	switch c.field {
	case "metadata":
		v, present := pi.metadata[c.key]
		switch {
		case c.null:
			ok = !present
		case c.op == "~":
			ok = present && strings.Contains(v, c.value)
		default:
			ok = present && v == c.value
		}
	case "status", "currency", "customer":
		v := map[string]string{"status": pi.status, "currency": pi.currency, "customer": pi.customer}[c.field]
		switch {
		case c.null:
			ok = v == ""
		case c.op == "~":
			ok = strings.Contains(v, c.value)
		case c.field == "currency":
			ok = strings.EqualFold(v, c.value)
		default:
			ok = v == c.value
		}
	case "amount", "created":
		v := pi.amount
		if c.field == "created" {
			v = pi.created.Unix()
		}
		if c.null {
			ok = false
			break
		}
		want, _ := strconv.ParseInt(c.value, 10, 64)
		switch c.op {
		case ":":
			ok = v == want
		case ">":
			ok = v > want
		case "<":
			ok = v < want
		case ">=":
			ok = v >= want
		case "<=":
			ok = v <= want
		}
	}
	return ok != c.negate
}
