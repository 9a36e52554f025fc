package charge

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

func TestContainsCardNumber(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"4242424242424242", true},
		{"card 4242 4242 4242 4242 please", true},
		{"4242-4242-4242-4242", true},
		{"5555555555554444", true},
		{"378282246310005", true},       // 15-digit Amex
		{"4222222222222", true},         // 13-digit Visa
		{"6011111111111117", true},      // Discover
		{"4242424242424241", false},     // fails Luhn
		{"424242424242", false},         // 12 digits
		{"42424242424242424242", false}, // 20 digits: not a card
		{"order-2026113012345678901", false},
		{"pm_card_visa", false},
		{"", false},
		{"4242  4242  4242  4242", true}, // runs of separators
		{"4242 - 4242 - 4242 - 4242", true},
		{"4242.4242.4242.4242", true},
		{"4242 .-. 4242\t", false}, // 8 digits
		{"card: 4242. 4242 -4242--4242.", true},
		{"4242  4242 4242 4241", false}, // fails Luhn
		{"v1.2.3", false},
		{"192.168.100.200", false}, // 12 digits
		{"x4242424242424242x", true},
		// A card number inside a longer run of groups: with its expiry and code, or after
		// other digits.
		{"4242424242424242 12 28 123", true},
		{"4242 4242 4242 4242 1228", true},
		{"12 4242 4242 4242 4242", true},
		{"ref 2026 4242424242424242", true},
		{"4242\t4242\t4242\t4242", true}, // tabs and line ends separate groups too
		{"4242\r\n4242\n4242 4242", true},
		{"2026-11-30 12:00", false},
		{"1234 5678 9012 3456 7890 1234", false}, // no window of whole groups passes Luhn
		{"42424242424242421", false},             // one group of 17 digits failing Luhn
		{"424242424242424242424242", false},      // one group of 24 digits: not a card
		// Slashes, underscores, and Unicode spaces and dashes separate groups too.
		{"4242/4242/4242/4242", false}, // slashes and underscores join no groups
		{"4242_4242_4242_4242", false},
		{"inv_20261130_000123", false},
		{"4242\u00a04242\u00a04242\u00a04242", true}, // no-break space
		{"4242\u20094242\u20094242\u20094242", true}, // thin space
		{"4242\u202f4242\u202f4242\u202f4242", true}, // narrow no-break space
		{"4242\u20074242\u20074242\u20074242", true}, // figure space
		{"4242\u20134242\u20134242\u20134242", true}, // en dash
		{"4242\u20144242\u20144242\u20144242", true}, // em dash
		{"4242\u30004242\u30004242\u30004242", true}, // ideographic space
		{"4242\v4242\f4242\u00854242", true},         // the other spaces of unicode.IsSpace
		{"4242 \u2010\u00a0 4242-4242.4242", true},
		{"4242\u20144242\u20144242\u20144241", false}, // fails Luhn
		{"4242\u00d74242\u00d74242\u00d74242", false}, // × is not a separator
		{"4242\xa04242\xa04242\xa04242", false},       // a stray byte (not UTF-8) is not one
		{"\u00a0\u00a04242424242424242\u2014", true},  // separators before the first group
		{"2026/11/30", false},
		// Invisible format characters (category Cf) are skipped as if absent: they neither
		// end a group nor count as a digit.
		{"4242\u200b4242\u200b4242\u200b4242", true},             // zero width space
		{"4242\u200c4242\u200d4242\u20604242", true},             // non-joiner, joiner, word joiner
		{"4242\u00ad4242\u00ad4242\u00ad4242", true},             // soft hyphen
		{"\ufeff4242\ufeff4242\ufeff4242\ufeff4242", true},       // byte order marks
		{"4\u200e2\u200f4\u202a2\u202c424242424242\u2066", true}, // bidirectional marks
		{"4242\U000e00204242\U000e00414242\U000e007f4242", true}, // tag characters
		{"4\u200b\u200b\u200b242424242424242", true},             // several in a row
		{"4242\u200b 4242 \u200b4242\u200b-\u200b4242", true},    // among separators
		{"\u200b \u200b4242424242424242", true},                  // before the first group
		{"x\u200b4242424242424242\u200bx", true},
		{"4242\u200b4242\u200b4242\u200b4241", false},           // fails Luhn
		{"424242\u200b424242", false},                           // 12 digits: invisible characters count for none
		{"4242\u200b4242\u200b4242\u200b4242\u200b4242", false}, // one group of 20 digits
		{"4242\u200b4242\u200b4242\u200b4242 1228", true},       // the group, then a separated one
		{"4242\u200b4242\u200bx4242\u200b4242", false},          // a letter still ends the run
		{"4242\u200b/4242/4242/4242", false},
		// Other scripts' digits, read after NFKC normalisation: fullwidth digits (as Japanese
		// input methods type them), Arabic-Indic, Devanagari, mathematical and circled ones.
		{"\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12", true},
		{"\u0664\u0662\u0664\u0662\u0664\u0662\u0664\u0662\u0664\u0662\u0664\u0662\u0664\u0662\u0664\u0662", true},
		{"\u06f4\u06f2\u06f4\u06f2\u06f4\u06f2\u06f4\u06f2 \u06f4\u06f2\u06f4\u06f2\u06f4\u06f2\u06f4\u06f2", true}, // Persian
		{"\u096a\u0968\u096a\u0968-\u096a\u0968\u096a\u0968-\u096a\u0968\u096a\u0968-\u096a\u0968\u096a\u0968", true},
		{"\U0001d7d2\U0001d7d0\U0001d7d2\U0001d7d0424242424242", true},                                              // mathematical bold digits
		{"\u2463\u2461\u2463\u2461\u2463\u2461\u2463\u2461\u2463\u2461\u2463\u2461\u2463\u2461\u2463\u2461", true},  // circled
		{"4242\uff14\uff12\uff14\uff12\u0664\u0662\u0664\u0662\u096a\u0968\u096a\u0968", true},                      // mixed scripts
		{"\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff11", false}, // fails Luhn
		{"\u0664\u0662\u0664\u0662\u0664\u0662\u0664\u0662\u0664\u0662\u0664\u0662", false},                         // 12 digits
		{"\u0e54\u0e52\u0e54\u0e52\u0e54\u0e52\u0e54\u0e52\u0e54\u0e52\u0e54\u0e52\u0e54\u0e52\u0e54\u0e52", true},  // Thai
		// The punctuation people put between groups of digits, in ASCII and other scripts.
		{"4242,4242,4242,4242", true},
		{"4242+4242+4242+4242", true},
		{"4242:4242:4242:4242", true},
		{"4242;4242;4242;4242", true},
		{"4242'4242'4242'4242", true},
		{"4242, 4242, 4242, 4242", true},
		{"4242\u00b74242\u00b74242\u00b74242", true}, // middle dot
		{"4242\u20194242\u20194242\u20194242", true}, // right single quotation mark
		{"4242\u30014242\u30024242\u30014242", true}, // ideographic comma and full stop
		{"4242\uff0c4242\uff1a4242\uff0b4242", true}, // fullwidth comma, colon, plus
		{"4242\ufe504242\ufe524242\uff0e4242", true}, // small comma and full stop, fullwidth full stop
		{"\u0664\u0662\u0664\u0662\u066c\u0664\u0662\u0664\u0662\u066c\u0664\u0662\u0664\u0662\u066c\u0664\u0662\u0664\u0662", true}, // Arabic thousands separator
		{"4242\u060c4242\u066b4242\u060c4242", true}, // Arabic comma, decimal separator
		{"\uff14\uff12\uff14\uff12\u3000\uff14\uff12\uff14\uff12\u3000\uff14\uff12\uff14\uff12\u3000\uff14\uff12\uff14\uff12", true}, // as typed in Japanese
		{"4242,4242,4242,4241", false},                // fails Luhn
		{"1,000,000", false},                          // 7 digits
		{"4242#4242#4242#4242", false},                // '#' is not a separator
		{"4242*4242*4242*4242", false},                // nor '*'
		{"4242\uff0f4242\uff0f4242\uff0f4242", false}, // a fullwidth slash is a slash
		{"2026-11-30T12:00:00Z", false},               // the T ends the run
		{"12:00:00, 12:00:00", false},                 // 12 digits
	} {
		if got := ContainsCardNumber(tc.in); got != tc.want {
			t.Errorf("ContainsCardNumber(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestContainsCardNumberAllocs: the check allocates nothing, whatever the separators.
func TestContainsCardNumberAllocs(t *testing.T) {
	for _, s := range []string{"4242 4242 4242 4241", "4242\u20144242\u00a04242\u30004241 ref_2026/11", "x\xff4242", "4242\u200b4242\u00ad4242\ufeff4241",
		"\uff14\uff12\uff14\uff12\u0664\u0662\u0664\u0662\u096a\u0968\u096a\u0968\uff0c4241"} {
		if n := testing.AllocsPerRun(100, func() { ContainsCardNumber(s) }); n != 0 {
			t.Errorf("ContainsCardNumber(%q): got %v allocations, want 0", s, n)
		}
	}
}

func FuzzContainsCardNumber(f *testing.F) {
	for _, s := range []string{"4242424242424242", "4242 4242 4242 4242", "4242  -  4242.4242.4242", "1234", "", "pm_card_visa", "12 4242 4242 4242 4242 1228", strings.Repeat("9", 40),
		"4242.4242-4242\u00a04242", "4242\u20134242\u30004242\u202f4242", "4242\xe2\x80\x934242", "4242\xe2\x804242\u20134242\u20134242",
		"4242\u200b4242\u200b4242\u200b4242", "\u00ad4242\u2060 4242\ufeff4242-4242\u200d", "4242\xe2\x80\x8b4242\xe2\x804242",
		// Other scripts' digits and the punctuation that groups digits.
		"\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12",
		"\u0664\u0662\u0664\u0662\u066c\u0664\u0662\u0664\u0662\u066c\u0664\u0662\u0664\u0662\u066c\u0664\u0662\u0664\u0662",
		"\u096a\u0968\u096a\u0968 \u096a\u0968\u096a\u0968 \u096a\u0968\u096a\u0968 \u096a\u0968\u096a\u0968",
		"4242,4242,4242,4242", "4242+4242+4242+4242", "4242:4242:4242:4242", "4242;4242'4242\u00b74242", "4242\u30014242\u30024242\uff0c4242",
		"\U0001d7d2\U0001d7d0\u2463\u2461 4242\uff0b4242\ufe524242", "\uff14\xef\xbc4242\u0664\u0662\xd9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := ContainsCardNumber(s)
		// A string without 13 digits, in any script, can never hold a card number.
		digits := 0
		for _, r := range norm.NFKC.String(s) {
			if unicode.Is(unicode.Nd, r) {
				digits++
			}
		}
		if got && digits < 13 {
			t.Fatalf("ContainsCardNumber(%q) = true with %d digits", s, digits)
		}
		// Embedding a string between letters never hides a card number it holds, nor do
		// other groups of digits around it.
		if got && !ContainsCardNumber("a"+s+"b") {
			t.Fatalf("card number in %q lost when wrapped", s)
		}
		if got && !ContainsCardNumber("12 "+s+" 34") {
			t.Fatalf("card number in %q lost between other groups", s)
		}
		// Invisible format characters change nothing, wherever they stand.
		if spaced := interleave(s, "\u200b"); ContainsCardNumber(spaced) != got {
			t.Fatalf("ContainsCardNumber(%q) = %v, but %v with a zero width space after every character", s, got, !got)
		}
		// The same digits in another script read the same: fullwidth (NFKC folds them),
		// Arabic-Indic and Devanagari (category Nd).
		for _, zero := range []rune{'\uff10', '\u0660', '\u0966'} {
			if other := redigit(s, zero); ContainsCardNumber(other) != got {
				t.Fatalf("ContainsCardNumber(%q) = %v, but %v with its digits from U+%04X", s, got, !got, zero)
			}
		}
		if want := containsCardNumberSlowly(s); got != want {
			t.Fatalf("ContainsCardNumber(%q) = %v, the plain reading says %v", s, got, want)
		}
	})
}

// redigit returns s with each ASCII digit replaced by the digit of the same value in the
// script whose zero is zero.
func redigit(s string, zero rune) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return zero + r - '0'
		}
		return r
	}, s)
}

// interleave returns s with sep after each of its characters (each byte of an invalid
// UTF-8 sequence being one), so that s's characters read the same.
func interleave(s, sep string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		b.WriteString(s[i : i+size])
		b.WriteString(sep)
		i += size
	}
	return b.String()
}

// containsCardNumberSlowly is ContainsCardNumber's plain reading, for the fuzzer to compare
// against: normalise to NFKC, drop the invisible format characters, split the rest into runs
// of digit groups, then try every span of whole groups.
func containsCardNumberSlowly(s string) bool {
	isSep := func(r rune) bool {
		return strings.ContainsRune(".,:;+'\u00b7\u2019\u3001\u3002\u060c\u066b\u066c", r) || unicode.IsSpace(r) || unicode.In(r, unicode.Pd)
	}
	var groups []string // the current run's groups, as ASCII digits
	check := func() bool {
		for i := range groups {
			digits := ""
			for j := i; j < len(groups); j++ {
				digits += groups[j]
				if len(digits) >= 13 && len(digits) <= 19 && luhnDigits(digits) {
					return true
				}
			}
		}
		groups = groups[:0]
		return false
	}
	group := ""
	for _, r := range norm.NFKC.String(s) {
		if unicode.In(r, unicode.Cf) {
			continue // invisible: as if absent
		}
		switch {
		case unicode.Is(unicode.Nd, r):
			group += string(rune('0' + plainDigitValue(r)))
		case isSep(r) && (group != "" || len(groups) > 0):
			if group != "" {
				groups, group = append(groups, group), ""
			}
		default:
			if group != "" {
				groups, group = append(groups, group), ""
			}
			if check() {
				return true
			}
		}
	}
	if group != "" {
		groups = append(groups, group)
	}
	return check()
}

// plainDigitValue is the value of decimal digit r: its place in its run of consecutive
// decimal digits, counted in tens from the run's start.
func plainDigitValue(r rune) int {
	start := r
	for unicode.Is(unicode.Nd, start-1) {
		start--
	}
	return int(r-start) % 10
}

// TestDigitValues: every Unicode decimal digit has the value of its place in a run of ten,
// and those NFKC folds to an ASCII digit have that digit's value.
func TestDigitValues(t *testing.T) {
	t.Parallel()
	n := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !unicode.Is(unicode.Nd, r) {
			if _, ok := digitValue(r); ok {
				t.Fatalf("digitValue(U+%04X) is a digit, but U+%04X is not in category Nd", r, r)
			}
			continue
		}
		n++
		v, ok := digitValue(r)
		if !ok || int(v) != plainDigitValue(r) {
			t.Fatalf("digitValue(U+%04X) = %d, %v; want %d", r, v, ok, plainDigitValue(r))
		}
		if f := norm.NFKC.String(string(r)); len(f) == 1 && f[0] >= '0' && f[0] <= '9' && f[0]-'0' != v {
			t.Fatalf("digitValue(U+%04X) = %d, but NFKC folds it to %q", r, v, f)
		}
	}
	if n%10 != 0 || n < 600 {
		t.Fatalf("%d decimal digits: want runs of ten, and every script's", n)
	}
}

func luhnDigits(d string) bool {
	sum, double := 0, false
	for i := len(d) - 1; i >= 0; i-- {
		v := int(d[i] - '0')
		if double {
			if v *= 2; v > 9 {
				v -= 9
			}
		}
		sum, double = sum+v, !double
	}
	return sum%10 == 0
}

// TestContainsCardNumberAfterAnEarlyAnswer: a check that found a card number in the middle
// of a character that NFKC folds to several segments (⑴ is "(1)", ﵒ three letters) leaves
// nothing behind for the next check.
func TestContainsCardNumberAfterAnEarlyAnswer(t *testing.T) {
	t.Parallel()
	firsts := []string{"4242424242424242\u2474", "4242424242424242\ufd52x", "4242 4242 4242 4242\u2474\u2475"}
	nexts := []string{"424242424242424\u00e9", "\u00e9424242424242424", "42424242424242\u0301\u00e9", "\u2474424242424242424", "e\u0301\u0301",
		"424242424242424\u00e9\u0301", "\u00c5424242424242424"}
	for _, first := range firsts {
		for _, next := range nexts {
			if !ContainsCardNumber(first) {
				t.Fatalf("ContainsCardNumber(%q) = false, want true", first)
			}
			if got, want := ContainsCardNumber(next), containsCardNumberSlowly(next); got != want {
				t.Fatalf("after %q, ContainsCardNumber(%q) = %v, want %v", first, next, got, want)
			}
		}
	}
}

func TestMaskedKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ key, want string }{
		{"4242424242424242", "************4242"},
		{"4242-4242-4242-4242", "****-****-****-4242"},
		{"1767225600000000009", "***************0009"}, // a nanosecond timestamp that passes Luhn
		{"1767225600000000001", "1767225600000000001"}, // one that does not
		{"order-4242424242424242-retry", "order-************4242-retry"},
		{"order-1042-payment", "order-1042-payment"},
		{"4242424242424241", "4242424242424241"}, // fails Luhn
		{"", ""},
	} {
		if got := MaskedKey(tc.key); got != tc.want {
			t.Errorf("MaskedKey(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

// FuzzMaskedKey: a key shown masked never holds a card number, keeps its length and its
// characters other than digits, and a key without a card number is shown as given.
func FuzzMaskedKey(f *testing.F) {
	for _, s := range []string{"4242424242424242", "4242 4242 4242 4242", "k-4242424242424242", "1767225600000000009", "abc", "",
		"4242,4242,4242,4242", "\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12\uff14\uff12"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		got := MaskedKey(key)
		if !ContainsCardNumber(key) {
			if got != key {
				t.Fatalf("MaskedKey(%q) = %q, want it as given", key, got)
			}
			return
		}
		if ContainsCardNumber(got) {
			t.Fatalf("MaskedKey(%q) = %q, which still holds a card number", key, got)
		}
		if utf8.ValidString(key) && utf8.RuneCountInString(got) != utf8.RuneCountInString(key) {
			t.Fatalf("MaskedKey(%q) = %q: not as long", key, got)
		}
	})
}
