package apikey

import (
	"strings"
	"testing"
)

func TestGenerateParse(t *testing.T) {
	t.Parallel()
	k, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	h, err := Parse(k.Secret)
	if err != nil {
		t.Fatalf("Parse(generated): %v", err)
	}
	if !h.Equal(k.Hash) {
		t.Fatalf("hash of parsed key differs from generated hash")
	}
	k2, _ := Generate()
	if k2.Secret == k.Secret || k2.ID == k.ID {
		t.Fatalf("two generated keys are equal")
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	k, _ := Generate()
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"prefix only", "pgk_"},
		{"wrong prefix", "sk_" + k.Secret[3:]},
		{"upper case", strings.ToUpper(k.Secret)},
		{"truncated", k.Secret[:len(k.Secret)-1]},
		{"too long", k.Secret + "a"},
		{"bad alphabet", k.Secret[:len(k.Secret)-1] + "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Parse(tc.in); err == nil {
				t.Fatalf("Parse(%q): got nil error, want ErrMalformed", tc.in)
			}
		})
	}
}

func TestParseRole(t *testing.T) {
	t.Parallel()
	for _, r := range []Role{RoleCheckout, RoleOperator, RoleAuditor} {
		got, err := ParseRole(string(r))
		if err != nil || got != r {
			t.Fatalf("ParseRole(%q) = %q, %v; want %q", r, got, err, r)
		}
	}
	if _, err := ParseRole("admin"); err == nil {
		t.Fatal("ParseRole(admin): got nil error")
	}
}

func FuzzParse(f *testing.F) {
	k, _ := Generate()
	for _, s := range []string{"", "pgk_", k.Secret, strings.ToUpper(k.Secret), k.Secret + "\x00", "Bearer " + k.Secret} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := Parse(s)
		if err != nil {
			return
		}
		// Whatever Parse accepts has the generated form and hashes like HashOf.
		if len(s) != secretLen || !strings.HasPrefix(s, secretPrefix) || s != strings.ToLower(s) {
			t.Fatalf("Parse accepted %q", s)
		}
		if !h.Equal(HashOf(s)) {
			t.Fatalf("hash mismatch for %q", s)
		}
	})
}
