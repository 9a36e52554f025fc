package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/paygate/paygate/apikey"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

func TestKeysLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := store.New(dbtest.Tx(t))

	k1, _ := apikey.Generate()
	k2, _ := apikey.Generate()
	if err := db.CreateKey(ctx, "m_keys", apikey.RoleCheckout, k1); err != nil {
		t.Fatal(err)
	}
	// A second live key of the same role: keys rotate without downtime.
	if err := db.CreateKey(ctx, "m_keys", apikey.RoleCheckout, k2); err != nil {
		t.Fatal(err)
	}
	for _, k := range []apikey.Key{k1, k2} {
		p, err := db.Authenticate(ctx, k.Hash)
		if err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
		if p.MerchantID != "m_keys" || p.Role != apikey.RoleCheckout || p.KeyID != k.ID {
			t.Fatalf("Authenticate: got %+v, want merchant m_keys, role checkout, key %s", p, k.ID)
		}
	}
	if err := db.RevokeKey(ctx, k1.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Authenticate(ctx, k1.Hash); !errors.Is(err, apikey.ErrUnknownKey) {
		t.Fatalf("Authenticate(revoked): got %v, want ErrUnknownKey", err)
	}
	if _, err := db.Authenticate(ctx, k2.Hash); err != nil {
		t.Fatalf("Authenticate(other key after revoke): %v", err)
	}
	unknown, _ := apikey.Generate()
	if _, err := db.Authenticate(ctx, unknown.Hash); !errors.Is(err, apikey.ErrUnknownKey) {
		t.Fatalf("Authenticate(unknown): got %v, want ErrUnknownKey", err)
	}
	keys, err := db.ListKeys(ctx, "m_keys")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 {
		t.Fatalf("ListKeys: got %d keys, want 2", len(keys))
	}
	for _, k := range keys {
		if revoked := k.RevokedAt != nil; revoked != (k.ID == k1.ID) {
			t.Fatalf("ListKeys: key %s revoked=%v, want only %s revoked", k.ID, revoked, k1.ID)
		}
	}
}
