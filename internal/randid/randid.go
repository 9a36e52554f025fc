// Package randid makes random identifiers: a prefix and 26 characters of the lowercase
// RFC 4648 base32 alphabet (130 random bits), as strings.ToLower(rand.Text()) spells them.
package randid

import (
	"crypto/rand"
	"strings"
)

// Len is the number of random characters of an identifier.
const Len = 26

// New returns prefix followed by Len random characters, built in one allocation.
func New(prefix string) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	var r [Len]byte
	_, _ = rand.Read(r[:]) // never fails
	var b strings.Builder
	b.Grow(len(prefix) + Len)
	b.WriteString(prefix)
	for _, c := range r {
		b.WriteByte(alphabet[c%32]) // 256 is a multiple of 32: every character is as likely
	}
	return b.String()
}
