package policysim

import (
	"fmt"
	"strings"
	"time"

	"github.com/paygate/paygate/retry"
)

// notes says, for a script, what the loop made of answer headers it did not take as they
// came, as the gateway reads them: a Retry-After that is neither delta-seconds nor an
// HTTP-date is ignored and the loop backs off; the Date header beside an HTTP-date
// Retry-After moves the loop's clock by at most policy.max_clock_skew_ms, and one that is
// no HTTP-date is ignored. One line per attempt concerned, in attempt order.
func (t *Timeline) notes() []string {
	script := t.File.Script
	if len(script) == 0 {
		return nil
	}
	bound := t.File.Policy.MaxClockSkew
	var out []string
	for i, rec := range t.Report.Attempts {
		if rec.HTTPStatus == 0 {
			continue // no answer, no headers
		}
		st := script[min(i, len(script)-1)]
		if rec.RetryAfterHeader != "" && !rec.HasRetryAfter {
			out = append(out, fmt.Sprintf("attempt %d: Retry-After %q is neither delta-seconds nor an HTTP-date: the loop ignores it and backs off",
				rec.N, clip(st.RetryAfter)))
		}
		if !rec.HasRetryAfter || !st.HasDate || st.Date == "" || deltaSeconds(st.RetryAfter) {
			continue // the Date header corrects only an HTTP-date Retry-After
		}
		answered := rec.StartedAt.Add(rec.Duration)
		at, ok := httpDate(st.Date)
		switch skew := at.Sub(answered); {
		case !ok:
			out = append(out, fmt.Sprintf("attempt %d: Date %q is not an HTTP-date: the loop ignores it and reads the Retry-After on its own clock",
				rec.N, clip(st.Date)))
		case skew > bound || -skew > bound:
			out = append(out, fmt.Sprintf("attempt %d: Date %q is %s the fake clock at the answer: the loop corrects at most %s of clock skew (max_clock_skew_ms)",
				rec.N, clip(st.Date), apart(skew), ms(bound)))
		}
	}
	return out
}

// deltaSeconds reports whether a Retry-After value is read as delta-seconds: it starts
// with a digit once its optional whitespace is dropped.
func deltaSeconds(v string) bool {
	v = strings.Trim(v, " \t")
	return v != "" && v[0] >= '0' && v[0] <= '9'
}

// apart says how far a date is from the fake clock: "1h0m20s ahead of", "5s behind".
func apart(d time.Duration) string {
	if d >= 0 {
		return d.String() + " ahead of"
	}
	return (-d).String() + " behind"
}

// httpDate parses an HTTP-date exactly as the retry loop reads a Date header
// (retry.ParseHTTPDate): IMF-fixdate, RFC 850 or asctime, with optional spaces and tabs
// around it, the leap second included; a two-digit RFC 850 year is placed as the loop places
// it against the fake clock's start.
func httpDate(s string) (time.Time, bool) {
	return retry.ParseHTTPDate(s, origin)
}
