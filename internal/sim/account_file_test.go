package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAccountFromFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state", "sim_account")
	first, err := AccountFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first, "acct_sim") {
		t.Fatalf("new account: got %q, want acct_sim...", first)
	}
	again, err := AccountFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Fatalf("second read: got %q, want %q", again, first)
	}
	s := New(Config{AccountID: again})
	if got := s.AccountID(); got != first {
		t.Fatalf("simulator account: got %q, want %q", got, first)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil || len(entries) != 1 {
		t.Fatalf("directory: got %v (%v), want the account file alone", entries, err)
	}
}

func TestAccountFromFileRefusesOtherContent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sim_account")
	if err := os.WriteFile(path, []byte("not an account\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := AccountFromFile(path); err == nil {
		t.Fatal("got nil error, want one for a file holding no account id")
	}
	if err := os.WriteFile(path, []byte("acct_kept1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if id, err := AccountFromFile(path); err != nil || id != "acct_kept1" {
		t.Fatalf("got %q, %v; want acct_kept1", id, err)
	}
}
