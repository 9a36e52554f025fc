package sim

import (
	"crypto/sha256"
	"math/rand/v2"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newID returns prefix followed by n random base62 characters, the shape of
// Stripe's object ids ("pi_3Nx...", "req_...").
func newID(prefix string, n int) string {
	b := make([]byte, len(prefix), len(prefix)+n)
	copy(b, prefix)
	for range n {
		b = append(b, base62[rand.IntN(len(base62))])
	}
	return string(b)
}

// digestID returns n base62 characters derived from the SHA-256 of parts, so
// the same parts always give the same characters (card fingerprints).
func digestID(n int, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	sum := h.Sum(nil)
	out := make([]byte, n)
	for i := range out {
		out[i] = base62[int(sum[i%len(sum)])%len(base62)]
	}
	return string(out)
}
