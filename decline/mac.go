package decline

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// MAC is a Mastercard Merchant Advice Code, 1 to 99; 0 means no advice.
// It is written as two digits ("03").
type MAC uint8

// The Merchant Advice Codes that decide a class. Codes 24 to 30 ask for a
// delay before the next attempt; see [MACDelay].
const (
	// MACNone is the absence of advice.
	MACNone MAC = 0
	// MACNewAccountInfo (01): new account information available; get the
	// new card data before trying again.
	MACNewAccountInfo MAC = 1
	// MACTryLater (02): cannot approve at this time, try again later.
	MACTryLater MAC = 2
	// MACDoNotTryAgain (03): do not try again.
	MACDoNotTryAgain MAC = 3
	// MACPaymentCancellation (21): the cardholder cancelled the recurring
	// payment; do not try again.
	MACPaymentCancellation MAC = 21
	// MACRetryAfter1Hour (24) to MACRetryAfter10Days (30): retry after
	// the delay the code names, and not before.
	MACRetryAfter1Hour   MAC = 24
	MACRetryAfter24Hours MAC = 25
	MACRetryAfter2Days   MAC = 26
	MACRetryAfter4Days   MAC = 27
	MACRetryAfter6Days   MAC = 28
	MACRetryAfter8Days   MAC = 29
	MACRetryAfter10Days  MAC = 30
)

// ErrInvalidMAC is returned by [ParseMAC] for a string that is not one or two
// decimal digits.
var ErrInvalidMAC = errors.New("decline: invalid merchant advice code")

// ParseMAC parses a Merchant Advice Code as Stripe's network_advice_code
// carries it: one or two decimal digits, surrounding spaces ignored ("03",
// "3", " 24"). The empty string and "00" are [MACNone] without error; anything
// else returns an error wrapping [ErrInvalidMAC].
func ParseMAC(s string) (MAC, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return MACNone, nil
	}
	if len(t) > 2 {
		return MACNone, fmt.Errorf("%w: %q", ErrInvalidMAC, s)
	}
	var v MAC
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c < '0' || c > '9' {
			return MACNone, fmt.Errorf("%w: %q", ErrInvalidMAC, s)
		}
		v = v*10 + MAC(c-'0')
	}
	return v, nil
}

// macDelays are Mastercard's "retry after" advice codes.
var macDelays = map[MAC]time.Duration{
	MACRetryAfter1Hour:   time.Hour,
	MACRetryAfter24Hours: 24 * time.Hour,
	MACRetryAfter2Days:   2 * day,
	MACRetryAfter4Days:   4 * day,
	MACRetryAfter6Days:   6 * day,
	MACRetryAfter8Days:   8 * day,
	MACRetryAfter10Days:  10 * day,
}

// MACDelay returns how long Mastercard's advice code m asks the merchant to
// wait before the next attempt: 1 hour for 24, 24 hours for 25, then 2, 4, 6,
// 8 and 10 days for 26 to 30. It returns 0 for every other code.
func MACDelay(m MAC) time.Duration { return macDelays[m] }

// String returns m as two digits, or "" for [MACNone].
func (m MAC) String() string {
	if m == MACNone {
		return ""
	}
	return fmt.Sprintf("%02d", uint8(m))
}

// MarshalText writes m as [MAC.String] does.
func (m MAC) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads m as [ParseMAC] does.
func (m *MAC) UnmarshalText(b []byte) error {
	v, err := ParseMAC(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}
