package api

import (
	"iter"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/paygate/paygate/charge"
)

// queryParams returns the parameters of the request's query string, or 400
// parameter_invalid when the query string is malformed: a pair with an invalid
// percent-escape ("limit=%zz") or separated by ';'. echo's QueryParams drops such pairs
// silently, which would read "limit=%zz" as no limit at all. The error names the parameter
// when its name can be read, and never echoes a value.
func queryParams(c echo.Context) (url.Values, *Error) {
	raw := c.Request().URL.RawQuery
	q, err := url.ParseQuery(raw)
	if err == nil {
		return q, nil
	}
	for name, value := range queryPairs(raw) {
		semicolon := strings.Contains(name, ";") || strings.Contains(value, ";")
		n, nameErr := url.QueryUnescape(name)
		_, valueErr := url.QueryUnescape(value)
		if !semicolon && nameErr == nil && valueErr == nil {
			continue // a pair url.ParseQuery keeps
		}
		param := ""
		if nameErr == nil && !strings.Contains(name, ";") && !charge.ContainsCardNumber(n) {
			param = n
		}
		msg := "the query string is malformed: an invalid percent-escape"
		if semicolon {
			msg = "the query string is malformed: parameters are separated by &, not ;"
		}
		if param != "" {
			msg += " in parameter " + strconvQuote(param)
		}
		return nil, invalid(charge.CodeParameterInvalid, param, msg)
	}
	// url.ParseQuery refuses only the pairs above: unreachable, but never a silent 200.
	return nil, invalid(charge.CodeParameterInvalid, "", "the query string is malformed")
}

// queryPairs yields the name and value of every pair of the raw query string raw, still
// escaped, split as url.ParseQuery splits them ('&' between pairs, the first '=' between
// name and value), the pairs it refuses included.
func queryPairs(raw string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for raw != "" {
			var pair string
			pair, raw, _ = strings.Cut(raw, "&")
			if pair == "" {
				continue
			}
			name, value, _ := strings.Cut(pair, "=")
			if !yield(name, value) {
				return
			}
		}
	}
}

// unescapeQueryLeniently decodes what url.QueryUnescape would ('+' and valid %XX escapes)
// and keeps an invalid escape as it is, so that a card number stays readable in a pair that
// url.QueryUnescape refuses.
func unescapeQueryLeniently(s string) string {
	if !strings.ContainsAny(s, "%+") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '+':
			b = append(b, ' ')
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}
