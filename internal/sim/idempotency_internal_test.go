package sim

import (
	"testing"
	"time"
)

func TestKeyStore(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ks := newKeyStore(time.Hour, 3)
	ok := response{status: 200, body: []byte("{}")}

	a, res := ks.begin("a", "fp", "req_1", t0)
	if res != execute {
		t.Fatalf("got %v for a new key, want execute", res)
	}
	if _, res := ks.begin("a", "fp", "req_2", t0); res != inUse {
		t.Errorf("got %v while running, want inUse", res)
	}
	ks.finish(a, ok)
	if e, res := ks.begin("a", "fp", "req_3", t0); res != replay || e.requestID != "req_1" {
		t.Errorf("got %v from %s, want a replay of req_1", res, e.requestID)
	}
	if _, res := ks.begin("a", "other", "req_4", t0); res != mismatch {
		t.Errorf("got %v for other parameters, want mismatch", res)
	}

	b, _ := ks.begin("b", "fp", "req_5", t0.Add(time.Minute))
	ks.abandon(b)
	if _, res := ks.begin("b", "other", "req_6", t0.Add(time.Minute)); res != execute {
		t.Errorf("got %v after an abandoned request, want execute (nothing was stored)", res)
	}

	// Expiry: "a" goes at t0+1h, "b" (begun at t0+1m) stays until t0+1h1m.
	ks.expire(t0.Add(time.Hour))
	if _, ok := ks.byKey["a"]; ok {
		t.Error("got key a after its TTL, want it expired")
	}
	if _, ok := ks.byKey["b"]; !ok {
		t.Error("got key b expired, want it running still")
	}

	// Eviction keeps at most 3 keys, dropping the oldest finished first.
	ks2 := newKeyStore(time.Hour, 3)
	for i, k := range []string{"k1", "k2", "k3", "k4", "k5"} {
		e, _ := ks2.begin(k, "fp", "req", t0.Add(time.Duration(i)*time.Second))
		ks2.finish(e, ok)
	}
	if ks2.count() != 3 {
		t.Errorf("got %d keys, want 3", ks2.count())
	}
	for _, k := range []string{"k1", "k2"} {
		if _, ok := ks2.byKey[k]; ok {
			t.Errorf("got %s kept, want the oldest evicted", k)
		}
	}
}
