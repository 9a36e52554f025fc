package api

import (
	"regexp"
	"testing"
)

// TestNewRequestID: a request id is req_ and 26 characters of the lowercase base32
// alphabet, as rand.Text spells them in lowercase, and no two are alike.
func TestNewRequestID(t *testing.T) {
	t.Parallel()
	shape := regexp.MustCompile(`^req_[a-z2-7]{26}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := newRequestID()
		if !shape.MatchString(id) {
			t.Fatalf("got %q, want %s", id, shape)
		}
		if seen[id] {
			t.Fatalf("%q given twice", id)
		}
		seen[id] = true
	}
}
