package randid

import (
	"regexp"
	"sort"
	"testing"
	"time"
)

var idRE = regexp.MustCompile(`^ch_[a-z2-7]{26}$`)

// An identifier is its prefix and Len characters of the base32 alphabet, and two differ.
func TestNew(t *testing.T) {
	a, b := New("ch_"), New("ch_")
	if !idRE.MatchString(a) || !idRE.MatchString(b) || a == b {
		t.Fatalf("got %q and %q", a, b)
	}
	if n := testing.AllocsPerRun(100, func() { _ = New("req_") }); n != 1 {
		t.Errorf("New allocates %v times, want 1", n)
	}
}

// Ordered identifiers have New's form, differ within one millisecond, and sort as their
// times do, across every digit of the time.
func TestOrdered(t *testing.T) {
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	a, b := Ordered("ch_", at), Ordered("ch_", at)
	if !idRE.MatchString(a) || !idRE.MatchString(b) || a == b || a[:3+TimeLen] != b[:3+TimeLen] {
		t.Fatalf("got %q and %q at one time", a, b)
	}
	times := []time.Time{time.Unix(0, 0), time.UnixMilli(1), time.UnixMilli(31), time.UnixMilli(32),
		at.Add(-time.Millisecond), at, at.Add(time.Millisecond), at.Add(time.Hour), at.AddDate(100, 0, 0),
		time.UnixMilli(1<<(5*TimeLen) - 1)}
	ids := make([]string, len(times))
	for i, tm := range times {
		ids[i] = Ordered("ch_", tm)
	}
	if !sort.StringsAreSorted(ids) {
		t.Errorf("identifiers made in time order do not sort: %q", ids)
	}
	if n := testing.AllocsPerRun(100, func() { _ = Ordered("ch_", at) }); n != 1 {
		t.Errorf("Ordered allocates %v times, want 1", n)
	}
}
