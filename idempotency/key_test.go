package idempotency

import (
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		wantErr error
	}{
		{"a", nil},
		{"order-123:attempt 1", nil},
		{strings.Repeat("k", 255), nil},
		{"", ErrKeyMissing},
		{strings.Repeat("k", 256), ErrKeyInvalid},
		{"tab\there", ErrKeyInvalid},
		{"ünïcode", ErrKeyInvalid},
		{"del\x7f", ErrKeyInvalid},
		{" ~", nil},
	} {
		got, err := ParseKey(tc.in)
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("ParseKey(%q): got error %v, want %v", tc.in, err, tc.wantErr)
		}
		if err == nil && got != tc.in {
			t.Errorf("ParseKey(%q) = %q, want the key unchanged", tc.in, got)
		}
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	fp := func(method, path, body string) Fingerprint {
		t.Helper()
		f, err := FingerprintOf(method, path, []byte(body))
		if err != nil {
			t.Fatalf("FingerprintOf(%q): %v", body, err)
		}
		return f
	}
	a := fp("POST", "/v1/charges", `{"amount":100,"currency":"usd","metadata":{"b":"2","a":"1"}}`)
	b := fp("POST", "/v1/charges", "{ \"currency\": \"usd\",\n \"metadata\": {\"a\":\"1\",\"b\":\"2\"}, \"amount\": 100 }")
	if a != b {
		t.Fatal("reordered keys and white space changed the fingerprint")
	}
	for name, other := range map[string]Fingerprint{
		"amount":  fp("POST", "/v1/charges", `{"amount":101,"currency":"usd","metadata":{"a":"1","b":"2"}}`),
		"path":    fp("POST", "/v1/charges/ch_1/reattempt", `{"amount":100,"currency":"usd","metadata":{"a":"1","b":"2"}}`),
		"method":  fp("PUT", "/v1/charges", `{"amount":100,"currency":"usd","metadata":{"a":"1","b":"2"}}`),
		"missing": fp("POST", "/v1/charges", `{"amount":100,"currency":"usd"}`),
	} {
		if other == a {
			t.Errorf("a different %s gave the same fingerprint", name)
		}
	}
	// Stored keys carry fingerprints: the definition never changes under them.
	if want := sha256.Sum256([]byte("POST\x00/v1/charges\x00" + `{"amount":100,"currency":"usd","metadata":{"a":"1","b":"2"}}`)); a != Fingerprint(want) {
		t.Error("the fingerprint is no longer sha256(method NUL path NUL canonical body)")
	}
	if c := FingerprintCanonical("POST", "/v1/charges", []byte(`{"amount":100,"currency":"usd","metadata":{"a":"1","b":"2"}}`)); c != a {
		t.Error("FingerprintCanonical of the canonical body differs from FingerprintOf")
	}
	if _, err := FingerprintOf("POST", "/", []byte(`{"a":1} {"b":2}`)); err == nil {
		t.Error("two JSON values: got nil error")
	}
	if _, err := FingerprintOf("POST", "/", []byte(`{"a":`)); err == nil {
		t.Error("truncated JSON: got nil error")
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"", "a", "key-1", strings.Repeat("x", 256), "\x00", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		if err != nil {
			return
		}
		if k != s || len(k) < 1 || len(k) > MaxKeyLen {
			t.Fatalf("ParseKey(%q) accepted a key out of range", s)
		}
		for i := 0; i < len(k); i++ {
			if k[i] < 0x20 || k[i] > 0x7e {
				t.Fatalf("ParseKey(%q) accepted a non-printable byte", s)
			}
		}
	})
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{}`, `{"b":1,"a":[1,2,{"d":null,"c":true}]}`, `"x"`, `1e3`, ``, `{"a":"\u00e9"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := Canonical(body)
		if err != nil {
			return
		}
		// The canonical form is a fixed point.
		c2, err := Canonical(c)
		if err != nil {
			t.Fatalf("Canonical(canonical %q): %v", c, err)
		}
		if string(c) != string(c2) {
			t.Fatalf("Canonical is not idempotent: %q then %q", c, c2)
		}
	})
}
