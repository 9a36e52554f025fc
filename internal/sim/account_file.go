package sim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// accountIDRE is the shape of an account id a file may hold: Stripe's "acct_" and
// letters, digits or underscores.
var accountIDRE = regexp.MustCompile(`^acct_[A-Za-z0-9_]{1,64}$`)

// AccountFromFile returns the account id kept in the file at path, creating the file with
// a new random id ("acct_sim" and random characters) when it does not exist, so that a
// simulator restarted with the same file answers as the same account: the PaymentIntents
// it held are gone, but the card fingerprints, which are the account's, stay the same,
// and charges recorded at the account are still its own. The file holds the id on one
// line. It returns an error when the file cannot be read or written, or holds anything
// but an account id.
func AccountFromFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(b))
		if !accountIDRE.MatchString(id) {
			return "", fmt.Errorf("sim: %s holds no account id (acct_...)", path)
		}
		return id, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("sim: account file: %w", err)
	}
	id := newID("acct_sim", 12)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("sim: account file: %w", err)
	}
	// Written beside the file and renamed over it: a crash leaves the file whole or absent.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".account-*")
	if err != nil {
		return "", fmt.Errorf("sim: account file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(id + "\n"); err != nil {
		tmp.Close()
		return "", fmt.Errorf("sim: account file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("sim: account file: %w", err)
	}
	// Another process may have created it meanwhile: the first file wins.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return AccountFromFile(path)
		}
		return "", fmt.Errorf("sim: account file: %w", err)
	}
	return id, nil
}
