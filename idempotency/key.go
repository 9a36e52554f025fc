package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxKeyLen is the longest Idempotency-Key accepted.
const MaxKeyLen = 255

var (
	// ErrKeyMissing is returned by ParseKey for an absent or empty header.
	ErrKeyMissing = errors.New("idempotency: Idempotency-Key header is required")
	// ErrKeyInvalid is returned by ParseKey for a key that is too long or not printable ASCII.
	ErrKeyInvalid = errors.New("idempotency: Idempotency-Key must be 1 to 255 printable ASCII characters")
)

// ParseKey validates an Idempotency-Key header value: 1 to 255 printable ASCII characters
// (0x20 to 0x7e). The key is used as given; it is never trimmed or folded.
func ParseKey(s string) (string, error) {
	if s == "" {
		return "", ErrKeyMissing
	}
	if len(s) > MaxKeyLen {
		return "", ErrKeyInvalid
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return "", ErrKeyInvalid
		}
	}
	return s, nil
}

// Fingerprint identifies a request for the purpose of idempotency: a SHA-256 of the request.
// Only its first 128 bits (MatchedLen bytes) are compared (Matches): a key's fingerprint is only
// ever compared with another request of the key's own merchant, and 128 bits make a match by
// chance impossible in practice. Keys are stored with those 128 bits alone; a key stored
// with the whole hash (by a release before the one that compared 128 bits) matches as well.
type Fingerprint [sha256.Size]byte

// MatchedLen is the number of a fingerprint's first bytes that Matches compares.
const MatchedLen = 16

// Matches reports whether a request of fingerprint f is the one a key stored with fingerprint
// stored was first used with: their first MatchedLen bytes agree.
func (f Fingerprint) Matches(stored Fingerprint) bool {
	return [MatchedLen]byte(f[:MatchedLen]) == [MatchedLen]byte(stored[:MatchedLen])
}

// FingerprintOf returns the fingerprint of a request: its method, its path and its
// canonical JSON body. It fails only when body is not one JSON value.
func FingerprintOf(method, path string, body []byte) (Fingerprint, error) {
	canon, err := Canonical(body)
	if err != nil {
		return Fingerprint{}, err
	}
	return FingerprintCanonical(method, path, canon), nil
}

// FingerprintCanonical returns the fingerprint of a request whose body's canonical JSON
// (Canonical) is canon: for a caller that has it already.
func FingerprintCanonical(method, path string, canon []byte) Fingerprint {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(canon)
	var fp Fingerprint
	h.Sum(fp[:0])
	return fp
}

// Canonical returns body as canonical JSON: one value, object keys sorted, no insignificant
// white space, numbers kept as written. An empty body is the JSON null.
func Canonical(body []byte) ([]byte, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return []byte("null"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("idempotency: body is not JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("idempotency: body holds more than one JSON value")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("idempotency: canonical form: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
