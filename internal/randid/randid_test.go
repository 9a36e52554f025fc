package randid

import (
	"regexp"
	"testing"
)

// An identifier is its prefix and Len characters of the base32 alphabet, and two differ.
func TestNew(t *testing.T) {
	re := regexp.MustCompile(`^ch_[a-z2-7]{26}$`)
	a, b := New("ch_"), New("ch_")
	if !re.MatchString(a) || !re.MatchString(b) || a == b {
		t.Fatalf("got %q and %q", a, b)
	}
	if n := testing.AllocsPerRun(100, func() { _ = New("req_") }); n != 1 {
		t.Errorf("New allocates %v times, want 1", n)
	}
}
