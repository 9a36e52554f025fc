package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/apikey"
)

// CreateKey stores the hash of a new key for merchantID (created if new) with role.
func (db *DB) CreateKey(ctx context.Context, merchantID string, role apikey.Role, k apikey.Key) error {
	return db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO merchants (id) VALUES ($1) ON CONFLICT DO NOTHING`, merchantID); err != nil {
			return fmt.Errorf("store: create merchant: %w", err)
		}
		_, err := tx.Exec(ctx,
			`INSERT INTO api_keys (id, merchant_id, role, hash) VALUES ($1, $2, $3, $4)`,
			k.ID, merchantID, string(role), k.Hash[:])
		if err != nil {
			return fmt.Errorf("store: create key: %w", err)
		}
		return nil
	})
}

// Authenticate returns the principal of the live key whose hash is h. It returns
// apikey.ErrUnknownKey for an unknown or revoked key.
func (db *DB) Authenticate(ctx context.Context, h apikey.Hash) (apikey.Principal, error) {
	var (
		p      apikey.Principal
		role   string
		stored []byte
	)
	err := db.pool.QueryRow(ctx,
		`SELECT id, merchant_id, role, hash FROM api_keys WHERE hash = $1 AND revoked_at IS NULL`, h[:],
	).Scan(&p.KeyID, &p.MerchantID, &role, &stored)
	if errors.Is(interpretError(err), ErrNotFound) {
		return apikey.Principal{}, apikey.ErrUnknownKey
	}
	if err != nil {
		return apikey.Principal{}, fmt.Errorf("store: authenticate: %w", err)
	}
	var sh apikey.Hash
	copy(sh[:], stored)
	if !sh.Equal(h) {
		return apikey.Principal{}, apikey.ErrUnknownKey
	}
	p.Role = apikey.Role(role)
	return p, nil
}

// KeyInfo describes a stored key; it never carries the secret.
type KeyInfo struct {
	ID         string
	MerchantID string
	Role       apikey.Role
	CreatedAt  time.Time
	RevokedAt  *time.Time
}

// ListKeys returns the keys of merchantID, or of every merchant when merchantID is empty,
// oldest first.
func (db *DB) ListKeys(ctx context.Context, merchantID string) ([]KeyInfo, error) {
	rows, err := db.pool.Query(ctx,
		`SELECT id, merchant_id, role, created_at, revoked_at FROM api_keys
		  WHERE $1 = '' OR merchant_id = $1 ORDER BY created_at, id`, merchantID)
	if err != nil {
		return nil, fmt.Errorf("store: list keys: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (KeyInfo, error) {
		var k KeyInfo
		var role string
		err := r.Scan(&k.ID, &k.MerchantID, &role, &k.CreatedAt, &k.RevokedAt)
		k.Role = apikey.Role(role)
		return k, err
	})
}

// RevokeKey revokes the key with id; revoking twice is not an error. It returns
// ErrNotFound for an unknown id.
func (db *DB) RevokeKey(ctx context.Context, id string) error {
	tag, err := db.pool.Exec(ctx,
		`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("store: revoke key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}
