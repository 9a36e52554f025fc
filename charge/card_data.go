package charge

import (
	"sort"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// ContainsCardNumber reports whether s holds something that looks like a card number: 13 to
// 19 decimal digits that pass the Luhn check, written as one group or as consecutive groups
// split by runs of separators. s is read after NFKC normalisation, as it is displayed: a
// fullwidth "４２４２" or a circled "①" is the digits it folds to, and every Unicode decimal
// digit (category Nd: Arabic-Indic "٤٢٤٢", Devanagari "४२४२", ...) counts with its value.
// Separators are what a person types between groups: any Unicode space (unicode.IsSpace:
// space, tab, line ends, no-break, thin, figure and ideographic spaces, ...), any Unicode
// dash (category Pd: hyphen, en and em dashes, ...), and the punctuation that groups digits:
// . , : ; + ' and their forms in other scripts (the middle dot, the right single quotation
// mark of Swiss grouping, the ideographic comma and full stop, the Arabic comma and the
// Arabic decimal and thousands separators; NFKC folds the fullwidth and small forms), as in
// "4242 4242", "4242  -  4242", "4242,4242", "4242:4242" or "٤٢٤٢٬٤٢٤٢". Every span of whole
// groups is checked, so a card number stays visible when other groups of digits surround it
// ("4242…4242 12 28 123", "ref 2026 4242…"). A single group longer than 19 digits (an order
// number, a timestamp) is not a card number. Text that NFKC leaves as it is (ASCII, most
// text) is read without allocating.
//
// The trade-off: every separator lets more innocent text read as one grouped number, and
// digit groups that add up to 13 to 19 digits pass the Luhn check about one time in ten
// ("2026-11-30 12:00:00" is 14 digits). Slashes and underscores, common in dates, paths and
// generated ids ("2026/11/30", "inv_20261130_000123") and rare in a written card number, do
// not join groups, nor do letters (the "T" of "2026-11-30T12:00:00Z").
//
// Invisible format characters (Unicode category Cf: zero width space, joiner and non-joiner,
// word joiner, soft hyphen, byte order mark, bidirectional marks, ...) are skipped wherever
// they stand, as if absent: they neither end a group nor count as a digit, so
// "4242\u200b4242\u200b4242\u200b4242" is the group "4242424242424242", read as displayed.
//
// paygate accepts processor payment method ids, never card data: a request that carries a
// card number anywhere is refused, and the value is never stored or logged.
func ContainsCardNumber(s string) bool {
	var sc cardScan
	if isASCII(s) {
		// ASCII is its own NFKC form.
		for i := 0; i < len(s); i++ {
			if sc.feed(rune(s[i])) {
				return true
			}
		}
		return sc.end()
	}
	it := nfkcIters.Get().(*norm.Iter)
	it.InitString(norm.NFKC, s)
	for !it.Done() {
		seg := it.Next()
		for len(seg) > 0 {
			r, size := rune(seg[0]), 1
			if r >= utf8.RuneSelf {
				r, size = utf8.DecodeRune(seg) // utf8.RuneError for a stray byte
			}
			seg = seg[size:]
			if sc.feed(r) {
				// Not given back: an iterator left in the middle of a character that folds
				// to several segments still holds its next one, which InitString keeps.
				return true
			}
		}
	}
	nfkcIters.Put(it)
	return sc.end()
}

// nfkcIters holds the normalising iterators of ContainsCardNumber (each holds its own
// buffer), so that a check allocates nothing in the steady state. Only an iterator that ran
// to the end of its text is put back.
var nfkcIters = sync.Pool{New: func() any { return new(norm.Iter) }}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// cardMaxLen is the longest card number.
const cardMaxLen = 19

// cardScan is the state of a reading of text, one character at a time, for card numbers.
type cardScan struct {
	last   [cardMaxLen]byte    // the run's last digits, by index modulo cardMaxLen
	starts [cardMaxLen + 1]int // indexes of the group starts a window may still begin at
	ns     int                 // starts in use
	t      int                 // digits in the current run
	inside bool                // whether the last character was a digit of the run
}

// feed reads the next character c of the (normalised) text and reports whether a card
// number ended before it.
func (sc *cardScan) feed(c rune) bool {
	if d, ok := digitValue(c); ok {
		if !sc.inside {
			// A window ending after this digit is at most cardMaxLen long: older starts are
			// out of reach.
			kept := 0
			for _, a := range sc.starts[:sc.ns] {
				if a >= sc.t+1-cardMaxLen {
					sc.starts[kept] = a
					kept++
				}
			}
			sc.starts[kept], sc.ns, sc.inside = sc.t, kept+1, true
		}
		sc.last[sc.t%cardMaxLen] = d
		sc.t++
		return false
	}
	switch {
	case c >= utf8.RuneSelf && unicode.Is(unicode.Cf, c): // no ASCII character is Cf
		// Invisible: the run, and the group, go on as if it were not there.
		return false
	case isGroupSeparator(c) && sc.t > 0:
		found := sc.inside && sc.groupEnds()
		sc.inside = false // the run goes on with the next group
		return found
	}
	found := sc.inside && sc.groupEnds()
	sc.t, sc.ns, sc.inside = 0, 0, false
	return found
}

// end reports whether the text ended with a card number.
func (sc *cardScan) end() bool { return sc.inside && sc.groupEnds() }

// groupEnds checks every window that ends with the group just ended and starts where a group
// started.
func (sc *cardScan) groupEnds() bool {
	for _, a := range sc.starts[:sc.ns] {
		if n := sc.t - a; n >= 13 && n <= cardMaxLen && luhnWindow(&sc.last, a, sc.t) {
			return true
		}
	}
	return false
}

// digitValue returns the value of c when c is a decimal digit of any script (category Nd).
func digitValue(c rune) (byte, bool) {
	if c >= '0' && c <= '9' {
		return byte(c - '0'), true
	}
	if c < utf8.RuneSelf || !unicode.Is(unicode.Nd, c) {
		return 0, false
	}
	// Unicode encodes the decimal digits of each script as one run of ten, from zero up.
	i := sort.Search(len(digitZeros), func(i int) bool { return digitZeros[i] > c }) - 1
	return byte(c - digitZeros[i]), true
}

// digitZeros are the zeros of the runs of ten decimal digits in Unicode (category Nd), in
// order: a digit's value is its distance from the nearest zero at or below it.
var digitZeros = func() []rune {
	var zeros []rune
	for _, r16 := range unicode.Nd.R16 {
		for c := rune(r16.Lo); c <= rune(r16.Hi); c += 10 * rune(r16.Stride) {
			zeros = append(zeros, c)
		}
	}
	for _, r32 := range unicode.Nd.R32 {
		for c := rune(r32.Lo); c <= rune(r32.Hi); c += 10 * rune(r32.Stride) {
			zeros = append(zeros, c)
		}
	}
	return zeros
}()

// isGroupSeparator reports whether c may separate the groups of a card number's digits: a
// Unicode space, a Unicode dash, or punctuation that groups digits (see ContainsCardNumber).
// c is NFKC-normal: the fullwidth and small forms of these are folded already.
func isGroupSeparator(c rune) bool {
	switch c {
	case '.', ',', ':', ';', '+', '\'',
		'\u00b7', // middle dot
		'\u2019', // right single quotation mark (Swiss grouping: 4'242)
		'\u3001', // ideographic comma
		'\u3002', // ideographic full stop
		'\u060c', // Arabic comma
		'\u066b', // Arabic decimal separator
		'\u066c': // Arabic thousands separator
		return true
	}
	return unicode.IsSpace(c) || unicode.Is(unicode.Pd, c)
}

// luhnWindow reports whether the run's digits with indexes from..to-1, kept in ring, pass
// the Luhn (mod 10) check.
func luhnWindow(ring *[cardMaxLen]byte, from, to int) bool {
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

// MaskedKey returns an inbound Idempotency-Key as paygate shows and logs it. Keys are the
// caller's opaque tokens and every key is accepted (a timestamp in nanoseconds passes the
// Luhn check one time in ten), but a key that holds a card number (ContainsCardNumber: a
// card number used as a key, grouped or not) is shown with every digit but its last four
// masked, "************4242"; any other key is shown as given. Only its display changes:
// the key itself is stored whole, so that a retry still matches it.
func MaskedKey(key string) string {
	if !ContainsCardNumber(key) {
		return key
	}
	digits := 0
	for _, r := range key {
		if _, ok := digitValue(r); ok {
			digits++
		}
	}
	b := make([]rune, 0, len(key))
	for _, r := range key {
		if _, ok := digitValue(r); ok {
			if digits > 4 {
				r = '*'
			}
			digits--
		}
		b = append(b, r)
	}
	return string(b)
}
