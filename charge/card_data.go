package charge

import (
	"unicode"
	"unicode/utf8"
)

// ContainsCardNumber reports whether s holds something that looks like a card number: 13 to
// 19 ASCII digits that pass the Luhn check, written as one group or as consecutive groups
// split by runs of separators: dots, any Unicode space (unicode.IsSpace: space, tab, line
// ends, no-break, thin, figure and ideographic spaces, ...) and any Unicode dash (category
// Pd: hyphen, en and em dashes, ...), as in "4242 4242", "4242  -  4242", "4242.4242" or
// "4242 4242". Every span of whole groups is checked, so a card number stays visible when
// other groups of digits surround it ("4242…4242 12 28 123", "ref 2026 4242…"). A single
// group longer than 19 digits (an order number, a timestamp) is not a card number. It
// allocates nothing.
//
// The trade-off: every separator lets more innocent text read as one grouped number, and
// digit groups that add up to 13 to 19 digits pass the Luhn check about one time in ten.
// Slashes and underscores, common in dates, paths and generated ids ("2026/11/30",
// "inv_20261130_000123") and rare in a written card number, do not join groups, nor do
// commas ("1,000,000"). Other digits (fullwidth "４２４２") are not read.
//
// Invisible format characters (Unicode category Cf: zero width space, joiner and non-joiner,
// word joiner, soft hyphen, byte order mark, bidirectional marks, ...) are skipped wherever
// they stand, as if absent: they neither end a group nor count as a digit, so
// "4242\u200b4242\u200b4242\u200b4242" is the group "4242424242424242", read as displayed.
//
// paygate accepts processor payment method ids, never card data: a request that carries a
// card number anywhere is refused, and the value is never stored or logged.
func ContainsCardNumber(s string) bool {
	const maxLen = 19
	var (
		last   [maxLen]byte    // the run's last digits, by index modulo maxLen
		starts [maxLen + 1]int // indexes of the group starts a window may still begin at
		ns     int             // starts in use
		t      int             // digits in the current run
		inside bool            // whether the last byte was a digit of the run
	)
	// groupEnds checks every window that ends with the group just ended and starts where a
	// group started.
	groupEnds := func() bool {
		for _, a := range starts[:ns] {
			if n := t - a; n >= 13 && n <= maxLen && luhnWindow(&last, a, t) {
				return true
			}
		}
		return false
	}
	for i := 0; i < len(s); {
		c := rune(s[i])
		size := 1
		if c >= utf8.RuneSelf {
			c, size = utf8.DecodeRuneInString(s[i:]) // utf8.RuneError for a stray byte
		}
		i += size
		switch {
		case c >= '0' && c <= '9':
			if !inside {
				// A window ending after this digit is at most maxLen long: older starts are
				// out of reach.
				kept := 0
				for _, a := range starts[:ns] {
					if a >= t+1-maxLen {
						starts[kept] = a
						kept++
					}
				}
				starts[kept], ns, inside = t, kept+1, true
			}
			last[t%maxLen] = byte(c - '0')
			t++
		case c >= utf8.RuneSelf && unicode.Is(unicode.Cf, c): // no ASCII character is Cf
			// Invisible: the run, and the group, go on as if it were not there.
		case isGroupSeparator(c) && t > 0:
			if inside && groupEnds() {
				return true
			}
			inside = false // the run goes on with the next group
		default:
			if inside && groupEnds() {
				return true
			}
			t, ns, inside = 0, 0, false
		}
	}
	return inside && groupEnds()
}

// isGroupSeparator reports whether c may separate the groups of a card number's digits: a
// dot, a Unicode space or a Unicode dash.
func isGroupSeparator(c rune) bool {
	return c == '.' || unicode.IsSpace(c) || unicode.Is(unicode.Pd, c)
}

// luhnWindow reports whether the run's digits with indexes from..to-1, kept in ring, pass
// the Luhn (mod 10) check.
func luhnWindow(ring *[19]byte, from, to int) bool {
	sum := 0
	double := false
	for i := to - 1; i >= from; i-- {
		v := int(ring[i%len(ring)])
		if double {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
		double = !double
	}
	return sum%10 == 0
}
