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
// form, the leap second 23:59:60 included. A date in the past gives 0. When
// date, the response's Date header, parses as an HTTP-date, it corrects the
// clock skew between the processor and this host: the wait is measured on the processor's clock, with the
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
// header. A two-digit RFC 850 year is placed relative to now (see rfc850Year), and the
// leap second 23:59:60 is read as the instant after 23:59:59.
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
// is placed as RFC 9110 requires (see rfc850Year), and the leap second
// 23:59:60 that RFC 9110's time-of-day allows is read in every form.
func parseHTTPDate(s string, now time.Time) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	// time.Parse refuses a 60th second. A leap second is read as 23:59:59 and
	// moved one second on: on a clock without leap seconds, such as this
	// host's, the instant it ends is the next midnight.
	leap := false
	if i := strings.Index(s, leapSecond); i >= 0 {
		s = s[:i] + lastSecond + s[i+len(leapSecond):]
		leap = true
	}
	t, ok := parseDateForms(s, now)
	if ok && leap {
		t = t.Add(time.Second)
	}
	return t, ok
}

// The leap second as an HTTP-date writes it, and the second before it; the
// spaces around them keep the match on the time-of-day of every form.
const (
	leapSecond = " 23:59:60 "
	lastSecond = " 23:59:59 "
)

// parseDateForms parses s in the three HTTP-date forms, seconds 00 to 59.
func parseDateForms(s string, now time.Time) (time.Time, bool) {
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
	return rfc850Year(t, now)
}

// rfc850Year places an RFC 850 date, whose year t carries only as two
// digits, in its century. RFC 9110 section 5.6.7: a timestamp that appears to
// be more than 50 years in the future is the most recent year in the past
// with the same last two digits. The whole date is compared, not the year: on
// 2 December 2026, 1 December 2076 is 2076 and 3 December 2076 is 1976. Of
// the years with those two digits the latest whose date is at most 50 years
// after now is taken, so a date is never read more than 50 years ahead, nor a
// century too early; a 29 February that a candidate year lacks skips that
// year.
func rfc850Year(t, now time.Time) (time.Time, bool) {
	now = now.UTC()
	limit := now.AddDate(50, 0, 0)
	yy := t.Year() % 100
	year := now.Year() - now.Year()%100 + 100 + yy
	for range 4 {
		c := time.Date(year, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
		if c.Day() == t.Day() && !c.After(limit) {
			return c, true
		}
		year -= 100
	}
	return time.Time{}, false
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
