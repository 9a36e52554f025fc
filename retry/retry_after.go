package retry

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// maxDeltaSeconds is the largest delta-seconds value represented exactly;
// larger values saturate to it (about 292 years).
const maxDeltaSeconds = math.MaxInt64 / int64(time.Second)

// HTTP-date layouts of RFC 9110 section 5.6.7: the preferred IMF-fixdate and
// the two obsolete forms every recipient must accept.
const (
	layoutIMFFixdate = "Mon, 02 Jan 2006 15:04:05 GMT"
	layoutRFC850     = "Monday, 02-Jan-06 15:04:05 GMT"
	layoutASCTime    = "Mon Jan _2 15:04:05 2006"
)

// ParseRetryAfter parses a Retry-After field value (RFC 9110 section 10.2.3)
// received at now and returns how long to wait from now.
//
// The value is either delta-seconds (1*DIGIT; huge values saturate rather
// than overflow) or an HTTP-date in IMF-fixdate, obsolete RFC 850 or asctime
// form. A date in the past gives 0. When date, the response's Date header,
// parses as an HTTP-date, it corrects the clock skew between the processor
// and this host: the wait is measured on the processor's clock, with the
// correction bounded by maxSkew so a wrong Date header cannot move the wait
// by more than that. An invalid Date header is ignored.
//
// The result is never negative. Capping it is the caller's decision (the
// loop compares it with Policy.RetryAfterCap). An invalid value returns 0
// and an error wrapping ErrInvalidRetryAfter.
func ParseRetryAfter(value, date string, now time.Time, maxSkew time.Duration) (time.Duration, error) {
	v := trimOWS(value)
	if v == "" {
		return 0, fmt.Errorf("%w: empty value", ErrInvalidRetryAfter)
	}
	if isDigit(v[0]) {
		secs, ok := parseDeltaSeconds(v)
		if !ok {
			return 0, fmt.Errorf("%w: %q is not delta-seconds", ErrInvalidRetryAfter, clip(v))
		}
		return time.Duration(secs) * time.Second, nil
	}
	at, ok := parseHTTPDate(v, now)
	if !ok {
		return 0, fmt.Errorf("%w: %q is neither delta-seconds nor an HTTP-date", ErrInvalidRetryAfter, clip(v))
	}
	// The processor's "now", on this host's clock: the Date header when it
	// is valid, its skew bounded by maxSkew.
	origin := now
	if served, ok := parseHTTPDate(trimOWS(date), now); ok {
		skew := served.Sub(now)
		maxSkew = max(maxSkew, 0)
		origin = now.Add(min(max(skew, -maxSkew), maxSkew))
	}
	// Sub saturates, so dates in the far future cannot overflow.
	return max(at.Sub(origin), 0), nil
}

// ParseHTTPDate parses an HTTP-date (IMF-fixdate, obsolete RFC 850 or asctime form, with
// optional whitespace around it) as ParseRetryAfter reads one, in a Retry-After or a Date
// header. A two-digit RFC 850 year is placed relative to now (see parseHTTPDate).
func ParseHTTPDate(s string, now time.Time) (time.Time, bool) {
	return parseHTTPDate(trimOWS(s), now)
}

// parseDeltaSeconds parses 1*DIGIT, saturating at maxDeltaSeconds.
func parseDeltaSeconds(s string) (int64, bool) {
	var n int64
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		if n > (maxDeltaSeconds-9)/10 {
			n = maxDeltaSeconds // keep validating the remaining characters
			continue
		}
		n = n*10 + int64(s[i]-'0')
	}
	return min(n, maxDeltaSeconds), true
}

// parseHTTPDate parses the three HTTP-date forms. A two-digit RFC 850 year
// that would be more than 50 years after now is taken as the most recent past
// year with those digits, as RFC 9110 requires.
func parseHTTPDate(s string, now time.Time) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	if t, err := time.Parse(layoutIMFFixdate, s); err == nil {
		return t, true
	}
	if t, err := time.Parse(layoutASCTime, s); err == nil {
		return t, true
	}
	t, err := time.Parse(layoutRFC850, s)
	if err != nil {
		return time.Time{}, false
	}
	ref := now.UTC().Year()
	year := ref - ref%100 + t.Year()%100
	if year > ref+50 {
		year -= 100
	}
	return time.Date(year, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC), true
}

// trimOWS removes the optional whitespace (SP, HTAB) around a field value.
func trimOWS(s string) string {
	return strings.Trim(s, " \t")
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// clip bounds a header value quoted in an error message.
func clip(s string) string {
	const limit = 64
	if len(s) > limit {
		return s[:limit] + "..."
	}
	return s
}
