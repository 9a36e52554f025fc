package charge

// ContainsCardNumber reports whether s holds something that looks like a card number: 13 to
// 19 digits that pass the Luhn check, written as one group or as consecutive groups split by
// runs of spaces, tabs, line ends, hyphens or dots ("4242 4242", "4242  -  4242",
// "4242.4242"). Every span of whole groups is checked, so a card number stays visible when
// other groups of digits surround it ("4242…4242 12 28 123", "ref 2026 4242…"). A single
// group longer than 19 digits (an order number, a timestamp) is not a card number.
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
	for i := 0; i < len(s); i++ {
		c := s[i]
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
			last[t%maxLen] = c - '0'
			t++
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

// isGroupSeparator reports whether c may separate the groups of a card number's digits.
func isGroupSeparator(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '-', '.':
		return true
	}
	return false
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
