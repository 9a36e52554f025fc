package charge

import (
	"strings"
	"testing"
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
	} {
		if got := ContainsCardNumber(tc.in); got != tc.want {
			t.Errorf("ContainsCardNumber(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func FuzzContainsCardNumber(f *testing.F) {
	for _, s := range []string{"4242424242424242", "4242 4242 4242 4242", "4242  -  4242.4242.4242", "1234", "", "pm_card_visa", strings.Repeat("9", 40)} {
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
		// Embedding a string between letters never hides a card number it holds.
		if got && !ContainsCardNumber("a"+s+"b") {
			t.Fatalf("card number in %q lost when wrapped", s)
		}
	})
}
