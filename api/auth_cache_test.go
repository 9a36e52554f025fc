package api

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/paygate/paygate/apikey"
)

type countingAuth struct {
	calls int
	known map[apikey.Hash]apikey.Principal
}

func (a *countingAuth) Authenticate(_ context.Context, h apikey.Hash) (apikey.Principal, error) {
	a.calls++
	p, ok := a.known[h]
	if !ok {
		return p, apikey.ErrUnknownKey
	}
	return p, nil
}

// TestCachedAuth runs on synctest's fake clock: the TTL passes without waiting for it.
func TestCachedAuth(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k, _ := apikey.Generate()
		next := &countingAuth{known: map[apikey.Hash]apikey.Principal{k.Hash: {KeyID: k.ID, MerchantID: "m", Role: apikey.RoleCheckout}}}
		c := NewCachedAuth(next, 50*time.Millisecond, 4)
		for range 3 {
			if p, err := c.Authenticate(context.Background(), k.Hash); err != nil || p.MerchantID != "m" {
				t.Fatalf("Authenticate: got %+v, %v", p, err)
			}
		}
		if next.calls != 1 {
			t.Fatalf("store lookups: got %d, want 1", next.calls)
		}
		unknown, _ := apikey.Generate()
		for range 2 {
			if _, err := c.Authenticate(context.Background(), unknown.Hash); !errors.Is(err, apikey.ErrUnknownKey) {
				t.Fatalf("unknown key: got %v", err)
			}
		}
		if next.calls != 3 {
			t.Fatalf("unknown keys must not be cached: got %d lookups, want 3", next.calls)
		}
		// A revoked key stops working once its entry expires.
		delete(next.known, k.Hash)
		time.Sleep(60 * time.Millisecond) // on the bubble's clock
		if _, err := c.Authenticate(context.Background(), k.Hash); !errors.Is(err, apikey.ErrUnknownKey) {
			t.Fatalf("revoked key after the TTL: got %v, want ErrUnknownKey", err)
		}
		// The cache stays bounded.
		for range 10 {
			g, _ := apikey.Generate()
			next.known[g.Hash] = apikey.Principal{MerchantID: "x"}
			_, _ = c.Authenticate(context.Background(), g.Hash)
		}
		if n := len(c.entries); n > 4 {
			t.Fatalf("cache size: got %d, want at most 4", n)
		}
	})
}
