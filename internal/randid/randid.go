// Package randid makes identifiers: a prefix and 26 characters of the lowercase RFC 4648
// base32 alphabet, as strings.ToLower(rand.Text()) spells them. New's are random (130 bits);
// Ordered's start with their time, so that the identifiers of rows written one after another
// sort one after another.
package randid

import (
	"crypto/rand"
	"strings"
	"time"
)

// Len is the number of characters after an identifier's prefix.
const Len = 26

// TimeLen is the number of characters an Ordered identifier's time takes: milliseconds since
// 1970 in base 32, up to the year 3084.
const TimeLen = 9

const (
	// alphabet is RFC 4648's base32 alphabet, lowercase.
	alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	// sortedAlphabet holds the same characters in byte order, so that a time spelt with it
	// sorts as the time does.
	sortedAlphabet = "234567abcdefghijklmnopqrstuvwxyz"
)

// New returns prefix followed by Len random characters, built in one allocation.
func New(prefix string) string {
	var b strings.Builder
	b.Grow(len(prefix) + Len)
	b.WriteString(prefix)
	writeRandom(&b, Len)
	return b.String()
}

// Ordered returns prefix followed by t's milliseconds in TimeLen characters and Len-TimeLen
// random characters (85 bits), built in one allocation. Identifiers made in order sort in
// order (to the millisecond; within one, at random): an index on them takes each new entry
// at its right edge, as it does a sequence's, instead of at a random page.
func Ordered(prefix string, t time.Time) string {
	var b strings.Builder
	b.Grow(len(prefix) + Len)
	b.WriteString(prefix)
	ms := uint64(max(t.UnixMilli(), 0))
	for i := TimeLen - 1; i >= 0; i-- {
		b.WriteByte(sortedAlphabet[(ms>>(5*i))&31])
	}
	writeRandom(&b, Len-TimeLen)
	return b.String()
}

// writeRandom writes n (at most Len) random characters of the alphabet to b.
func writeRandom(b *strings.Builder, n int) {
	var r [Len]byte
	_, _ = rand.Read(r[:n]) // never fails
	for _, c := range r[:n] {
		b.WriteByte(alphabet[c%32]) // 256 is a multiple of 32: every character is as likely
	}
}
