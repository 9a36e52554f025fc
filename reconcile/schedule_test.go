package reconcile

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/processor"
)

func TestScheduleNext(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		now    time.Duration // after the first send
		want   time.Duration
		wantOK bool
	}{
		{"just sent", 0, 30 * time.Second, true},
		{"at the first slot", 30 * time.Second, 5 * time.Minute, true},
		{"between slots", 10 * time.Minute, time.Hour, true},
		{"at one hour", time.Hour, 24 * time.Hour, true},
		{"after the key closed", processor.KeyWindow, 24 * time.Hour, true},
		{"day three", 50 * time.Hour, 72 * time.Hour, true},
		{"last slot ahead", 7*24*time.Hour - time.Nanosecond, 7 * 24 * time.Hour, true},
		{"at the last slot", 7 * 24 * time.Hour, 0, false},
		{"long after", 30 * 24 * time.Hour, 0, false},
		{"clock behind the send", -time.Minute, 30 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := DefaultSchedule.Next(t0, t0.Add(tc.now))
			if ok != tc.wantOK || (ok && !got.Equal(t0.Add(tc.want))) {
				t.Fatalf("got %v %v, want +%s %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
	if got := DefaultSchedule.Window(); got != 7*24*time.Hour {
		t.Errorf("window: got %s, want 168h", got)
	}
}

func TestParseSchedule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    Schedule
		wantErr string
	}{
		{"30s,5m,1h,1d*7", DefaultSchedule, ""},
		{" 30s , 5m , 1h , 24h * 7 ", DefaultSchedule, ""},
		{"1m", Schedule{time.Minute}, ""},
		{"10s*3,1h30m", Schedule{10 * time.Second, 20 * time.Second, 30 * time.Second, 90 * time.Minute}, ""},
		{"2d*2", Schedule{2 * day, 4 * day}, ""},
		{"", nil, "offset"},
		{"5m,30s", nil, "does not follow"},
		{"1h,1h", nil, "does not follow"},
		{"0s", nil, "within a year"},
		{"-5m", nil, "within a year"},
		{"1d*0", nil, "repeat count"},
		{"1d*x", nil, "repeat count"},
		{"400d", nil, "within a year"},
		{"1d*400", nil, "within a year"},
		{"1s*1001", nil, "repeat count"},
		{"1.5d", nil, "whole days"},
		{"soon", nil, "offset"},
		{"1h,,2h", nil, "offset"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseSchedule(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestScheduleString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   Schedule
		want string
	}{
		{DefaultSchedule, "30s,5m,1h,1d*7"},
		{Schedule{time.Hour, 2 * time.Hour, 150 * time.Minute}, "1h*2,150m"},
		{Schedule{1500 * time.Millisecond}, "1.5s"},
		{Schedule{2 * time.Hour, 4 * time.Hour, 5 * time.Hour}, "2h*2,5h"},
	} {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("String(%v): got %q, want %q", []time.Duration(tc.in), got, tc.want)
		}
	}
}

// FuzzParseSchedule checks that whatever parses is a valid schedule that reads back the same
// from its own String.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"30s,5m,1h,1d*7", "1m", "10s*3,1h30m", "2d*2", "1h,,2h", "1d*400", "1ns*1000", "-1d", "9223372036s", "1h*2,150m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseSchedule(text)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("ParseSchedule(%q) = %v, invalid: %v", text, s, err)
		}
		again, err := ParseSchedule(s.String())
		if err != nil || !slices.Equal(again, s) {
			t.Fatalf("ParseSchedule(%q).String() = %q reads back as %v, %v; want %v", text, s.String(), again, err, s)
		}
	})
}

func TestPolicyValidate(t *testing.T) {
	t.Parallel()
	if err := (Policy{}).Validate(); err != nil {
		t.Errorf("zero policy: got %v, want valid", err)
	}
	if err := (Policy{Schedule: Schedule{time.Hour, time.Minute}}).Validate(); err == nil {
		t.Error("decreasing schedule: got valid, want an error")
	}
}

func TestListWindow(t *testing.T) {
	t.Parallel()
	c := pendingCharge()
	from, to := Policy{}.ListWindow(c)
	if !from.Equal(c.CreatedAt.Add(-DefaultListBefore)) || !to.Equal(c.LastSentAt.Add(DefaultListAfter)) {
		t.Errorf("default: got [%v, %v], want [creation (before the first send) - 5m, last send + 10m]", from, to)
	}
	c.FirstSentAt, c.LastSentAt = time.Time{}, time.Time{}
	from, to = Policy{ListBefore: time.Minute, ListAfter: 2 * time.Minute}.ListWindow(c)
	if !from.Equal(c.CreatedAt.Add(-time.Minute)) || !to.Equal(c.CreatedAt.Add(2*time.Minute)) {
		t.Errorf("no send time: got [%v, %v], want around the creation", from, to)
	}
}

func TestListWindowCoversReplays(t *testing.T) {
	t.Parallel()
	c := pendingCharge()
	replayed := evidenceAt(time.Hour)
	replayed.Replay = &ReplayAnswer{Code: "timeout"}
	c.Checks = []Check{{N: 1, At: replayed.At, Evidence: replayed}, {N: 2, At: t0.Add(2 * time.Hour), Evidence: evidenceAt(2 * time.Hour)}}
	_, to := Policy{}.ListWindow(c)
	if want := t0.Add(time.Hour + DefaultListAfter); !to.Equal(want) {
		t.Errorf("window end: got %v, want %v (the replay's check plus the margin)", to, want)
	}
}
