package retry

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

// exactCeiling is the reference: min(cap, base·2^n) in exact arithmetic.
func exactCeiling(base, cap time.Duration, n int) time.Duration {
	if base <= 0 || cap <= 0 {
		return 0
	}
	if n >= 63 {
		return cap // base ≥ 1, so base·2^n ≥ 2^63 > every int64 cap
	}
	v := new(big.Int).Lsh(big.NewInt(int64(base)), uint(max(n, 0)))
	if v.Cmp(big.NewInt(int64(cap))) > 0 {
		return cap
	}
	return time.Duration(v.Int64())
}

// TestBackoffProperties checks, for every n in [0, 10000] and extreme
// bases and caps, that the ceiling is exact, never negative, never above
// the cap and never decreasing, and that every delay lies in [0, ceiling).
func TestBackoffProperties(t *testing.T) {
	t.Parallel()
	const maxD = time.Duration(math.MaxInt64)
	pairs := []Backoff{
		{Base: 500 * time.Millisecond, Cap: 5 * time.Second},
		{Base: 1, Cap: 1},
		{Base: 1, Cap: maxD},
		{Base: 3, Cap: maxD},
		{Base: maxD, Cap: maxD},
		{Base: maxD / 3, Cap: maxD - 1},
		{Base: maxD, Cap: 1},
		{Base: time.Hour, Cap: time.Millisecond},
		{Base: 0, Cap: time.Second},
		{Base: time.Second, Cap: 0},
		{Base: -time.Second, Cap: time.Second},
		{Base: time.Second, Cap: -1},
		{Base: math.MinInt64, Cap: maxD},
	}
	r := rand.New(rand.NewPCG(7, 11))
	for _, b := range pairs {
		prev := time.Duration(0)
		for n := -2; n <= 10000; n++ {
			c := b.Ceiling(n)
			if want := exactCeiling(b.Base, b.Cap, n); c != want {
				t.Fatalf("%+v Ceiling(%d): got %v, want %v", b, n, c, want)
			}
			if c < 0 || (b.Cap > 0 && c > b.Cap) {
				t.Fatalf("%+v Ceiling(%d): got %v, want in [0, %v]", b, n, c, b.Cap)
			}
			if c < prev {
				t.Fatalf("%+v Ceiling(%d): got %v after %v, want non-decreasing", b, n, c, prev)
			}
			prev = c
			for range 3 {
				d := b.Delay(n, r)
				if c == 0 && d != 0 {
					t.Fatalf("%+v Delay(%d): got %v, want 0", b, n, d)
				}
				if c > 0 && (d < 0 || d >= c) {
					t.Fatalf("%+v Delay(%d): got %v, want in [0, %v)", b, n, d, c)
				}
			}
		}
	}
}

func TestBackoffCeilings(t *testing.T) {
	t.Parallel()
	b := DefaultPolicy().Backoff()
	want := []time.Duration{ms(500), ms(1000), ms(2000), ms(4000), ms(5000), ms(5000)}
	for n, w := range want {
		if got := b.Ceiling(n); got != w {
			t.Errorf("Ceiling(%d): got %v, want %v", n, got, w)
		}
	}
}

// TestBackoffJitterSpreads checks that full jitter uses the whole range:
// delays are uniform enough that each tenth of [0, ceiling) gets a share.
func TestBackoffJitterSpreads(t *testing.T) {
	t.Parallel()
	b := Backoff{Base: time.Second, Cap: time.Second}
	r := rand.New(rand.NewPCG(1, 1))
	var buckets [10]int
	const samples = 10000
	for range samples {
		buckets[b.Delay(0, r)*10/time.Second]++
	}
	for i, n := range buckets {
		if n < samples/10*8/10 || n > samples/10*12/10 {
			t.Errorf("tenth %d: got %d samples, want about %d", i, n, samples/10)
		}
	}
}

func TestBackoffReproducible(t *testing.T) {
	t.Parallel()
	b := DefaultPolicy().Backoff()
	r1 := rand.New(rand.NewPCG(42, 0))
	r2 := rand.New(rand.NewPCG(42, 0))
	for n := range 20 {
		if d1, d2 := b.Delay(n, r1), b.Delay(n, r2); d1 != d2 {
			t.Fatalf("Delay(%d) with equal seeds: got %v and %v, want equal", n, d1, d2)
		}
	}
}
