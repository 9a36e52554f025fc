package decline

import (
	"slices"
	"testing"
	"time"
)

// t0 is the first decline in the tests.
var t0 = time.Date(2025, time.March, 1, 12, 0, 0, 0, time.UTC)

func TestSchedule(t *testing.T) {
	t.Parallel()

	tests := []struct {
		class Class
		want  []time.Duration
	}{
		{Funds, []time.Duration{24 * time.Hour, 72 * time.Hour, 120 * time.Hour, 168 * time.Hour, 240 * time.Hour, 336 * time.Hour}},
		{IssuerTransient, []time.Duration{time.Hour, 24 * time.Hour, 72 * time.Hour, 168 * time.Hour}},
		{Generic, []time.Duration{48 * time.Hour, 120 * time.Hour, 216 * time.Hour, 336 * time.Hour}},
		{Never, nil},
		{FixData, nil},
		{Authenticate, nil},
		{Class("bogus"), nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.class), func(t *testing.T) {
			t.Parallel()
			got := Schedule(tt.class)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if len(got) > 0 {
				got[0] = 0 // a copy: the schedule itself is untouched
				if Schedule(tt.class)[0] == 0 {
					t.Errorf("Schedule returned its own slice")
				}
			}
		})
	}
}

func TestNextSlotEachSlot(t *testing.T) {
	t.Parallel()

	for _, class := range []Class{Funds, IssuerTransient, Generic} {
		t.Run(string(class), func(t *testing.T) {
			t.Parallel()
			offsets := Schedule(class)
			for n, off := range offsets {
				got, ok := NextSlot(class, t0, n, time.Time{})
				if want := t0.Add(off); !ok || !got.Equal(want) {
					t.Errorf("after %d reattempts: got %v, %v, want %v, true", n, got, ok, want)
				}
			}
			if got, ok := NextSlot(class, t0, len(offsets), time.Time{}); ok {
				t.Errorf("after %d reattempts: got %v, true, want none", len(offsets), got)
			}
		})
	}
}

func TestNextSlotNone(t *testing.T) {
	t.Parallel()

	for _, class := range []Class{Never, FixData, ""} {
		if got, ok := NextSlot(class, t0, 0, time.Time{}); ok {
			t.Errorf("%q: got %v, true, want none", class, got)
		}
	}
	// A negative count is no count.
	if got, ok := NextSlot(Funds, t0, -3, time.Time{}); !ok || !got.Equal(t0.Add(day)) {
		t.Errorf("negative count: got %v, %v, want %v, true", got, ok, t0.Add(day))
	}
}

func TestNextSlotMACDelay(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		mac      MAC
		attempts int
		want     time.Duration // offset from t0; -1 for none
	}{
		{"MAC 24 before the first slot", 24, 0, 1 * day},
		{"MAC 25 ends on the first slot", 25, 0, 1 * day},
		{"MAC 26 skips day 1", 26, 0, 3 * day},
		{"MAC 27 skips to day 5", 27, 0, 5 * day},
		{"MAC 28 skips to day 7", 28, 0, 7 * day},
		{"MAC 29 skips to day 10", 29, 0, 10 * day},
		{"MAC 30 ends on day 10", 30, 0, 10 * day},
		{"MAC 30 after five reattempts", 30, 5, 14 * day},
		{"MAC 30 leaves nothing after six", 30, 6, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := NextSlot(Funds, t0, tt.attempts, t0.Add(MACDelay(tt.mac)))
			if tt.want < 0 {
				if ok {
					t.Errorf("got %v, true, want none", got)
				}
				return
			}
			if want := t0.Add(tt.want); !ok || !got.Equal(want) {
				t.Errorf("got %v, %v, want %v, true", got, ok, want)
			}
		})
	}
}
