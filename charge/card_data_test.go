package charge

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
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
		{"4242,4242,4242,4242", false},                          // commas join no groups
		{"4242\u200b/4242/4242/4242", false},
	} {
		if got := ContainsCardNumber(tc.in); got != tc.want {
			t.Errorf("ContainsCardNumber(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestContainsCardNumberAllocs: the check allocates nothing, whatever the separators.
func TestContainsCardNumberAllocs(t *testing.T) {
	for _, s := range []string{"4242 4242 4242 4241", "4242\u20144242\u00a04242\u30004241 ref_2026/11", "x\xff4242", "4242\u200b4242\u00ad4242\ufeff4241"} {
		if n := testing.AllocsPerRun(100, func() { ContainsCardNumber(s) }); n != 0 {
			t.Errorf("ContainsCardNumber(%q): got %v allocations, want 0", s, n)
		}
	}
}

func FuzzContainsCardNumber(f *testing.F) {
	for _, s := range []string{"4242424242424242", "4242 4242 4242 4242", "4242  -  4242.4242.4242", "1234", "", "pm_card_visa", "12 4242 4242 4242 4242 1228", strings.Repeat("9", 40),
		"4242.4242-4242\u00a04242", "4242\u20134242\u30004242\u202f4242", "4242\xe2\x80\x934242", "4242\xe2\x804242\u20134242\u20134242",
		"4242\u200b4242\u200b4242\u200b4242", "\u00ad4242\u2060 4242\ufeff4242-4242\u200d", "4242\xe2\x80\x8b4242\xe2\x804242"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := ContainsCardNumber(s)
		// A string without 13 digits can never hold a card number.
		digits := 0
		for i := 0; i < len(s); i++ {
			if s[i] >= '0' && s[i] <= '9' {
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
		if want := containsCardNumberSlowly(s); got != want {
			t.Fatalf("ContainsCardNumber(%q) = %v, the plain reading says %v", s, got, want)
		}
	})
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
// against: drop the invisible format characters, split the rest into runs of digit groups,
// then try every span of whole groups.
func containsCardNumberSlowly(s string) bool {
	isSep := func(r rune) bool {
		return r == '.' || unicode.IsSpace(r) || unicode.In(r, unicode.Pd)
	}
	var groups []string // the current run's groups
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
	for _, r := range s {
		if unicode.In(r, unicode.Cf) {
			continue // invisible: as if absent
		}
		switch {
		case r >= '0' && r <= '9':
			group += string(r)
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
