package retry

import (
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

// maxSkew is the skew bound used by these tests.
const maxSkew = 30 * time.Second

// httpDate formats t as an IMF-fixdate.
func httpDate(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		value string
		date  string
		want  time.Duration
	}{
		{"delta seconds", "120", "", 2 * time.Minute},
		{"zero", "0", "", 0},
		{"leading zeros", "007", "", 7 * time.Second},
		{"optional whitespace", " \t5 ", "", 5 * time.Second},
		{"huge delta saturates", strings.Repeat("9", 40), "", time.Duration(maxDeltaSeconds) * time.Second},
		{"IMF-fixdate ahead", httpDate(t0.Add(90 * time.Second)), "", 90 * time.Second},
		{"IMF-fixdate in the past", httpDate(t0.Add(-time.Hour)), "", 0},
		{"RFC 850", "Monday, 02-Mar-26 12:00:10 GMT", "", 10 * time.Second},
		{"RFC 850 two-digit year in the past century", "Tuesday, 02-Mar-99 12:00:10 GMT", "", 0},
		{"asctime", "Mon Mar  2 12:00:20 2026", "", 20 * time.Second},
		// RFC 9110 section 5.6.7: time-of-day runs to 23:59:60, a leap second.
		{"IMF-fixdate leap second", "Mon, 02 Mar 2026 23:59:60 GMT", "", 12 * time.Hour},
		{"RFC 850 leap second", "Monday, 02-Mar-26 23:59:60 GMT", "", 12 * time.Hour},
		{"asctime leap second", "Mon Mar  2 23:59:60 2026", "", 12 * time.Hour},
		{"Date header: server 2 s ahead", httpDate(t0.Add(7 * time.Second)), httpDate(t0.Add(2 * time.Second)), 5 * time.Second},
		{"Date header: server 2 s behind", httpDate(t0.Add(3 * time.Second)), httpDate(t0.Add(-2 * time.Second)), 5 * time.Second},
		{"Date header: skew beyond the bound", httpDate(t0.Add(time.Hour + 5*time.Second)), httpDate(t0.Add(time.Hour)), time.Hour + 5*time.Second - maxSkew},
		{"Date header invalid: ignored", httpDate(t0.Add(5 * time.Second)), "yesterday", 5 * time.Second},
		{"delta seconds ignore the Date header", "5", httpDate(t0.Add(time.Hour)), 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseRetryAfter(tt.value, tt.date, t0, maxSkew)
			if err != nil {
				t.Fatalf("ParseRetryAfter(%q, %q): got error %v, want nil", tt.value, tt.date, err)
			}
			if got != tt.want {
				t.Errorf("ParseRetryAfter(%q, %q): got %v, want %v", tt.value, tt.date, got, tt.want)
			}
		})
	}
}

func TestParseRetryAfterInvalid(t *testing.T) {
	t.Parallel()
	for _, v := range []string{
		"", "  ", "-1", "+5", "1.5", "5s", "5 5", "0x10", "soon",
		"Mon, 02 Mar 2026 12:00:00 PST",  // IMF-fixdate is always GMT
		"Monday, 02-Mar-26 12:00:10 EST", // so is RFC 850 here
		"Mon, 32 Mar 2026 12:00:00 GMT",  // no such day
		"2026-03-02T12:00:00Z",           // RFC 3339 is not an HTTP-date
		"Mon, 02 Mar 2026 12:30:60 GMT",  // a leap second ends a day, at 23:59:60
		"Mon, 02 Mar 2026 23:59:61 GMT",  // no second 61
		"Mon, 02 Mar 2026 24:00:00 GMT",  // no hour 24
	} {
		got, err := ParseRetryAfter(v, "", t0, maxSkew)
		if !errors.Is(err, ErrInvalidRetryAfter) {
			t.Errorf("ParseRetryAfter(%q): got error %v, want ErrInvalidRetryAfter", v, err)
		}
		if got != 0 {
			t.Errorf("ParseRetryAfter(%q): got %v, want 0", v, got)
		}
	}
}

// TestParseHTTPDate: the dates RFC 9110 section 5.6.7 asks every recipient to read, the
// leap second in each form, and two-digit RFC 850 years placed by comparing the whole
// date with now plus 50 years ("MUST interpret a timestamp that appears to be more than 50
// years in the future as representing the most recent year in the past that had the same
// last two digits").
func TestParseHTTPDate(t *testing.T) {
	t.Parallel()
	dec2 := time.Date(2026, time.December, 2, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		in   string
		now  time.Time
		want time.Time
	}{
		// RFC 9110 section 5.6.7, its three examples of one instant.
		{"IMF-fixdate", "Sun, 06 Nov 1994 08:49:37 GMT", dec2, time.Date(1994, 11, 6, 8, 49, 37, 0, time.UTC)},
		{"RFC 850", "Sunday, 06-Nov-94 08:49:37 GMT", dec2, time.Date(1994, 11, 6, 8, 49, 37, 0, time.UTC)},
		{"asctime", "Sun Nov  6 08:49:37 1994", dec2, time.Date(1994, 11, 6, 8, 49, 37, 0, time.UTC)},
		// RFC 9110 section 5.6.7, time-of-day "00:00:00 - 23:59:60 (leap second)": the
		// leap second ends where the next day begins on a clock without leap seconds.
		{"IMF-fixdate leap second", "Thu, 31 Dec 2026 23:59:60 GMT", dec2, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"RFC 850 leap second", "Thursday, 31-Dec-26 23:59:60 GMT", dec2, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"asctime leap second", "Thu Dec 31 23:59:60 2026", dec2, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"leap second at a month's end", "Tue, 30 Jun 2026 23:59:60 GMT", dec2, time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)},
		// RFC 9110 section 5.6.7, two-digit years: the whole date decides, not the year.
		{"50 years ahead less a day", "Tuesday, 01-Dec-76 12:00:00 GMT", dec2, time.Date(2076, 12, 1, 12, 0, 0, 0, time.UTC)},
		{"exactly 50 years ahead", "Wednesday, 02-Dec-76 12:00:00 GMT", dec2, time.Date(2076, 12, 2, 12, 0, 0, 0, time.UTC)},
		{"50 years ahead and a second", "Wednesday, 02-Dec-76 12:00:01 GMT", dec2, time.Date(1976, 12, 2, 12, 0, 1, 0, time.UTC)},
		{"50 years ahead and a day", "Thursday, 03-Dec-76 12:00:00 GMT", dec2, time.Date(1976, 12, 3, 12, 0, 0, 0, time.UTC)},
		{"this year", "Wednesday, 02-Dec-26 12:00:30 GMT", dec2, time.Date(2026, 12, 2, 12, 0, 30, 0, time.UTC)},
		{"the previous century", "Friday, 31-Dec-99 23:59:59 GMT", dec2, time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC)},
		{"late in a century, early digits are the next", "Sunday, 01-Jan-05 00:00:00 GMT",
			time.Date(2090, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2105, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"29 February of a year 2100 lacks", "Tuesday, 29-Feb-00 12:00:00 GMT",
			time.Date(2060, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2000, 2, 29, 12, 0, 0, 0, time.UTC)},
		{"two-digit year and a leap second", "Thursday, 31-Dec-76 23:59:60 GMT", dec2, time.Date(1977, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := ParseHTTPDate(tt.in, tt.now)
			if !ok || !got.Equal(tt.want) {
				t.Errorf("ParseHTTPDate(%q): got %v, %v; want %v, true", tt.in, got, ok, tt.want)
			}
		})
	}
}

// TestParseRetryAfterSkew sweeps HTTP-dates slightly ahead of and behind
// the local clock, with a Date header showing the processor's clock ahead of
// or behind ours: the wait is never negative, is the processor's intended
// wait while the skew is within the bound, and otherwise moves at most the
// bound away from the local reading of the date.
func TestParseRetryAfterSkew(t *testing.T) {
	t.Parallel()
	for offset := -10 * time.Second; offset <= 10*time.Second; offset += time.Second {
		for skew := -2 * time.Minute; skew <= 2*time.Minute; skew += 15 * time.Second {
			server := t0.Add(skew) // the processor's clock
			value := httpDate(server.Add(offset))
			got, err := ParseRetryAfter(value, httpDate(server), t0, maxSkew)
			if err != nil {
				t.Fatalf("ParseRetryAfter(%q): got error %v, want nil", value, err)
			}
			if got < 0 {
				t.Errorf("offset %v skew %v: got %v, want ≥ 0", offset, skew, got)
			}
			intended := max(offset, 0)
			if abs(skew) <= maxSkew && got != intended {
				t.Errorf("offset %v skew %v (within bound): got %v, want %v", offset, skew, got, intended)
			}
			local := max(server.Add(offset).Sub(t0), 0) // the date read on our clock
			if d := got - local; d > maxSkew || d < -maxSkew {
				t.Errorf("offset %v skew %v: got %v, want within %v of %v", offset, skew, got, maxSkew, local)
			}
		}
	}
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func FuzzParseRetryAfter(f *testing.F) {
	seeds := []struct{ value, date string }{
		{"0", ""},
		{"120", ""},
		{"  42\t", ""},
		{strings.Repeat("9", 30), ""},
		{"-1", ""},
		{"1.5", ""},
		{"", ""},
		{httpDate(t0.Add(time.Minute)), ""},
		{httpDate(t0.Add(-time.Minute)), ""},
		{httpDate(t0.Add(time.Minute)), httpDate(t0.Add(10 * time.Second))},
		{httpDate(t0.Add(time.Minute)), httpDate(t0.Add(-time.Hour))},
		{"Monday, 02-Mar-26 12:00:10 GMT", ""},
		{"Mon Mar  2 12:00:20 2026", "Mon Mar  2 12:00:00 2026"},
		{"Fri, 31 Dec 9999 23:59:59 GMT", ""},
		{"Mon, 01 Jan 0001 00:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT"},
		{"Mon, 02 Mar 2026 12:00:00 PST", ""},
		{"\xff\xfe", "\x00"},
		// The leap second in each form (RFC 9110 section 5.6.7), and next to it.
		{"Mon, 02 Mar 2026 23:59:60 GMT", ""},
		{"Monday, 02-Mar-26 23:59:60 GMT", "Mon, 02 Mar 2026 23:59:60 GMT"},
		{"Mon Mar  2 23:59:60 2026", ""},
		{"Mon, 02 Mar 2026 23:59:61 GMT", ""},
		{"Mon, 02 Mar 2026 12:00:60 GMT", ""},
		// Two-digit years around 50 years ahead of the fake clock (2 March 2026, noon).
		{"Monday, 02-Mar-76 12:00:00 GMT", ""},
		{"Monday, 02-Mar-76 12:00:01 GMT", ""},
		{"Sunday, 01-Mar-76 12:00:00 GMT", ""},
		{"Tuesday, 03-Mar-76 12:00:00 GMT", ""},
		{"Tuesday, 29-Feb-00 12:00:00 GMT", ""},
		{"Wednesday, 31-Dec-75 23:59:60 GMT", ""},
	}
	for _, s := range seeds {
		f.Add(s.value, s.date, int64(0))
	}
	f.Fuzz(func(t *testing.T, value, date string, offsetSec int64) {
		now := t0.Add(time.Duration(offsetSec%(1<<32)) * time.Second)
		got, err := ParseRetryAfter(value, date, now, maxSkew)
		if err != nil {
			if !errors.Is(err, ErrInvalidRetryAfter) {
				t.Fatalf("ParseRetryAfter(%q, %q): got error %v, want one wrapping ErrInvalidRetryAfter", value, date, err)
			}
			if got != 0 {
				t.Fatalf("ParseRetryAfter(%q, %q): got %v with an error, want 0", value, date, got)
			}
			return
		}
		if got < 0 {
			t.Fatalf("ParseRetryAfter(%q, %q): got %v, want ≥ 0", value, date, got)
		}
		again, err2 := ParseRetryAfter(value, date, now, maxSkew)
		if again != got || err2 != nil {
			t.Fatalf("ParseRetryAfter(%q, %q): got %v then %v, want the same", value, date, got, again)
		}
		alone, err := ParseRetryAfter(value, "", now, maxSkew)
		if err != nil {
			t.Fatalf("ParseRetryAfter(%q) without Date: got error %v, want nil as with Date", value, err)
		}
		// The Date header moves the wait by at most the skew bound.
		if d := got - alone; d > maxSkew || d < -maxSkew {
			t.Fatalf("ParseRetryAfter(%q, %q): got %v, %v without Date; want within %v", value, date, got, alone, maxSkew)
		}
		// A Date header equal to the local clock changes nothing.
		if same, _ := ParseRetryAfter(value, httpDate(now), now, maxSkew); same != alone {
			t.Fatalf("ParseRetryAfter(%q) with Date = now: got %v, want %v", value, same, alone)
		}
		// A leap second is the second after 23:59:59.
		if v := trimOWS(value); date == "" && strings.Contains(v, leapSecond) {
			prev, err := ParseRetryAfter(strings.Replace(v, leapSecond, lastSecond, 1), "", now, maxSkew)
			switch {
			case err != nil:
				t.Fatalf("ParseRetryAfter(%q) reads, the same at 23:59:59 does not: %v", value, err)
			case prev == 0 && got > time.Second, prev > 0 && prev < math.MaxInt64-time.Second && got != prev+time.Second:
				t.Fatalf("ParseRetryAfter(%q): got %v, %v at 23:59:59; want one second more", value, got, prev)
			}
		}
		// Delta-seconds are whole seconds.
		if v := strings.Trim(value, " \t"); v != "" && isDigit(v[0]) && got%time.Second != 0 {
			t.Fatalf("ParseRetryAfter(%q): got %v, want whole seconds", value, got)
		}
	})
}
