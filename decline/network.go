package decline

import "strings"

// Network is the card network an authorization went over. Its string forms
// are stable and lowercase.
type Network string

// The networks this package tells apart. Every other brand is
// [UnknownNetwork], and so is the empty Network.
const (
	Visa           Network = "visa"
	Mastercard     Network = "mastercard"
	Amex           Network = "amex"
	Discover       Network = "discover"
	UnknownNetwork Network = "unknown"
)

// ParseNetwork returns the network named by a card brand or network string,
// such as Stripe's card.brand ("visa", "mastercard", "amex", "discover") or
// payment_method_details.card.network. Case, spaces, hyphens and underscores
// are ignored, and "American Express" and "MasterCard" are understood. Every
// other value is [UnknownNetwork].
func ParseNetwork(s string) Network {
	key := strings.Map(func(r rune) rune {
		switch r {
		case ' ', '_', '-', '\t':
			return -1
		}
		return r
	}, strings.ToLower(s))
	switch key {
	case "visa":
		return Visa
	case "mastercard", "mc":
		return Mastercard
	case "amex", "americanexpress":
		return Amex
	case "discover":
		return Discover
	}
	return UnknownNetwork
}

// String returns the stable lowercase form of n; the empty Network is
// "unknown".
func (n Network) String() string { return string(n.known()) }

// known returns n, or [UnknownNetwork] for the empty or an unlisted value.
func (n Network) known() Network {
	switch n {
	case Visa, Mastercard, Amex, Discover:
		return n
	}
	return UnknownNetwork
}

// visaRules reports whether Visa's reattempt cap applies to an
// authorization on n. An unknown network gets every network's rules.
func (n Network) visaRules() bool {
	k := n.known()
	return k == Visa || k == UnknownNetwork
}

// mastercardRules reports whether Mastercard's decline caps apply to an
// authorization on n. An unknown network gets every network's rules.
func (n Network) mastercardRules() bool {
	k := n.known()
	return k == Mastercard || k == UnknownNetwork
}
