package charge

// ContainsCardNumber reports whether s holds something that looks like a card number: a run
// of 13 to 19 digits, optionally grouped by runs of spaces, hyphens or dots ("4242 4242",
// "4242  -  4242", "4242.4242"), that passes the Luhn check. Longer digit runs (order
// numbers, timestamps) are not card numbers.
//
// paygate accepts processor payment method ids, never card data: a request that carries a
// card number anywhere is refused, and the value is never stored or logged.
func ContainsCardNumber(s string) bool {
	var digits [20]byte
	n := 0 // digits in the current run; 20 means "too long to be a card"
	flush := func() bool {
		ok := n >= 13 && n <= 19 && luhn(digits[:n])
		n = 0
		return ok
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			if n < len(digits) {
				digits[n] = c - '0'
				n++
			}
		case (c == ' ' || c == '-' || c == '.') && n > 0:
			// A separator inside a run of digits: the run goes on.
		default:
			if flush() {
				return true
			}
		}
	}
	return flush()
}

// luhn reports whether the digits pass the Luhn (mod 10) check.
func luhn(d []byte) bool {
	sum := 0
	double := false
	for i := len(d) - 1; i >= 0; i-- {
		v := int(d[i])
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
