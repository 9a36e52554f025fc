// Package apikey owns the gateway's API keys: their format, their roles and the hash under
// which they are stored. A key's secret is shown once, when it is created; only its SHA-256
// hash is kept, and a presented key is compared by hash in constant time.
package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Role is what a key may do.
type Role string

// The roles of the contract.
const (
	// RoleCheckout creates and reads charges.
	RoleCheckout Role = "checkout"
	// RoleOperator reviews, reconciles and resolves charges, and replays dead letters.
	RoleOperator Role = "operator"
	// RoleAuditor reads reports and the audit trail, and changes nothing.
	RoleAuditor Role = "auditor"
)

// ParseRole returns the role named s, or an error naming the roles that exist.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleCheckout, RoleOperator, RoleAuditor:
		return r, nil
	}
	return "", fmt.Errorf("apikey: unknown role %q (want checkout, operator or auditor)", s)
}

// Principal is who a presented key speaks for.
type Principal struct {
	KeyID      string
	MerchantID string
	Role       Role
}

// Key is a newly generated key: Secret is shown to its owner once and never stored.
type Key struct {
	ID     string
	Secret string
	Hash   Hash
}

// Hash is the SHA-256 of a key's secret, the only form in which a key is stored.
type Hash [sha256.Size]byte

// Equal compares two hashes in constant time.
func (h Hash) Equal(o Hash) bool { return subtle.ConstantTimeCompare(h[:], o[:]) == 1 }

const (
	secretPrefix = "pgk_"
	secretBytes  = 32
)

var encoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// secretLen is the length of a well-formed secret.
var secretLen = len(secretPrefix) + encoding.EncodedLen(secretBytes)

// Generate returns a new random key.
func Generate() (Key, error) {
	var raw [secretBytes]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return Key{}, fmt.Errorf("apikey: random: %w", err)
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return Key{}, fmt.Errorf("apikey: random: %w", err)
	}
	secret := secretPrefix + strings.ToLower(encoding.EncodeToString(raw[:]))
	return Key{ID: "key_" + hex.EncodeToString(id[:]), Secret: secret, Hash: HashOf(secret)}, nil
}

// ErrUnknownKey is returned by a key lookup for a key that does not exist or is revoked.
var ErrUnknownKey = errors.New("apikey: unknown or revoked key")

// ErrMalformed is returned by Parse for a value that cannot be a paygate key.
var ErrMalformed = errors.New("apikey: malformed key")

// Parse checks that s has the form of a paygate key and returns its hash. It never says
// whether such a key exists: the store answers that.
func Parse(s string) (Hash, error) {
	if len(s) != secretLen || !strings.HasPrefix(s, secretPrefix) {
		return Hash{}, ErrMalformed
	}
	body := strings.ToUpper(s[len(secretPrefix):])
	if _, err := encoding.DecodeString(body); err != nil {
		return Hash{}, ErrMalformed
	}
	if strings.ToLower(body) != s[len(secretPrefix):] {
		return Hash{}, ErrMalformed
	}
	return HashOf(s), nil
}

// HashOf returns the stored form of a secret.
func HashOf(secret string) Hash { return sha256.Sum256([]byte(secret)) }
