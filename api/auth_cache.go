package api

import (
	"context"
	"sync"
	"time"

	"github.com/paygate/paygate/apikey"
)

// CachedAuth remembers the principals of live keys for a short time, so that a charge costs
// no database round trip to authenticate. A revoked key keeps working until its entry
// expires (at most TTL); unknown keys are never cached.
type CachedAuth struct {
	next Authenticator
	ttl  time.Duration
	max  int

	mu      sync.Mutex
	entries map[apikey.Hash]cachedPrincipal
}

type cachedPrincipal struct {
	p       apikey.Principal
	expires time.Time
}

var _ Authenticator = (*CachedAuth)(nil)

// NewCachedAuth caches next's answers for ttl, for at most max keys.
func NewCachedAuth(next Authenticator, ttl time.Duration, max int) *CachedAuth {
	return &CachedAuth{next: next, ttl: ttl, max: max, entries: make(map[apikey.Hash]cachedPrincipal)}
}

// Authenticate implements Authenticator.
func (c *CachedAuth) Authenticate(ctx context.Context, h apikey.Hash) (apikey.Principal, error) {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.entries[h]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.p, nil
	}
	p, err := c.next.Authenticate(ctx, h)
	if err != nil {
		return p, err
	}
	c.mu.Lock()
	if len(c.entries) >= c.max {
		for k, old := range c.entries {
			if !now.Before(old.expires) || len(c.entries) >= c.max {
				delete(c.entries, k)
			}
			if len(c.entries) < c.max/2 {
				break
			}
		}
	}
	c.entries[h] = cachedPrincipal{p: p, expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return p, nil
}
