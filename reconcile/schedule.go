package reconcile

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule is when a pending charge is checked: offsets from its first send, strictly
// increasing. After the last one the charge goes to review (unresolved after the window).
type Schedule []time.Duration

const day = 24 * time.Hour

// DefaultSchedule checks at +30 s, +5 min, +1 h, then daily for 7 days: "30s,5m,1h,1d*7".
var DefaultSchedule = Schedule{
	30 * time.Second, 5 * time.Minute, time.Hour,
	1 * day, 2 * day, 3 * day, 4 * day, 5 * day, 6 * day, 7 * day,
}

// Bounds of a schedule.
const (
	maxScheduleSlots  = 1000
	maxScheduleOffset = 366 * day
)

// Validate reports the first problem with s: no slot, more than 1000 slots, an offset not
// positive or beyond a year, or offsets not strictly increasing.
func (s Schedule) Validate() error {
	if len(s) == 0 {
		return errors.New("reconcile: schedule: no check")
	}
	if len(s) > maxScheduleSlots {
		return fmt.Errorf("reconcile: schedule: %d checks, at most %d", len(s), maxScheduleSlots)
	}
	for i, d := range s {
		switch {
		case d <= 0:
			return fmt.Errorf("reconcile: schedule: offset %s is not positive", d)
		case d > maxScheduleOffset:
			return fmt.Errorf("reconcile: schedule: offset %s is beyond a year", d)
		case i > 0 && d <= s[i-1]:
			return fmt.Errorf("reconcile: schedule: offset %s does not follow %s", formatOffset(d), formatOffset(s[i-1]))
		}
	}
	return nil
}

// Next returns the first slot after now of a charge first sent at ref; ok is false when the
// schedule has ended (the window is over).
func (s Schedule) Next(ref, now time.Time) (next time.Time, ok bool) {
	for _, d := range s {
		if at := ref.Add(d); at.After(now) {
			return at, true
		}
	}
	return time.Time{}, false
}

// Window is the length of the schedule: its last offset.
func (s Schedule) Window() time.Duration {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1]
}

// String renders s in ParseSchedule's syntax, runs D, 2D, ..., nD written D*n:
// DefaultSchedule is "30s,5m,1h,1d*7".
func (s Schedule) String() string {
	var parts []string
	for i := 0; i < len(s); {
		d := s[i]
		n := 1
		for i+n < len(s) && s[i+n] == time.Duration(n+1)*d {
			n++
		}
		// A run starts at its own unit ("1d*7" is 1d..7d); a run of one is plain.
		if n > 1 {
			parts = append(parts, formatOffset(d)+"*"+strconv.Itoa(n))
			i += n
			continue
		}
		parts = append(parts, formatOffset(d))
		i++
	}
	return strings.Join(parts, ",")
}

// ParseSchedule reads a schedule: offsets from the first send separated by commas, each a Go
// duration ("30s", "5m", "1h30m") or whole days ("1d"); "D*n" stands for D, 2D, ..., nD
// ("1d*7": daily for 7 days). The result must pass Validate.
func ParseSchedule(text string) (Schedule, error) {
	var s Schedule
	for item := range strings.SplitSeq(text, ",") {
		item = strings.TrimSpace(item)
		unit, count := item, 1
		if base, n, ok := strings.Cut(item, "*"); ok {
			c, err := strconv.Atoi(strings.TrimSpace(n))
			if err != nil || c < 1 || c > maxScheduleSlots {
				return nil, fmt.Errorf("reconcile: schedule %q: repeat count %q: want 1-%d", text, n, maxScheduleSlots)
			}
			unit, count = strings.TrimSpace(base), c
		}
		d, err := parseOffset(unit)
		if err != nil {
			return nil, fmt.Errorf("reconcile: schedule %q: %w", text, err)
		}
		if d <= 0 || d > maxScheduleOffset || time.Duration(count) > maxScheduleOffset/d {
			return nil, fmt.Errorf("reconcile: schedule %q: %q: want offsets within a year", text, item)
		}
		if len(s)+count > maxScheduleSlots {
			return nil, fmt.Errorf("reconcile: schedule %q: more than %d checks", text, maxScheduleSlots)
		}
		for k := 1; k <= count; k++ {
			s = append(s, time.Duration(k)*d)
		}
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// parseOffset reads a Go duration or a whole number of days ("7d").
func parseOffset(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 0 || days > int(maxScheduleOffset/day) {
			return 0, fmt.Errorf("offset %q: want whole days within a year", s)
		}
		return time.Duration(days) * day, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("offset %q: %w", s, err)
	}
	return d, nil
}

// formatOffset writes d in the largest whole unit among d, h, m and s (Go's form otherwise).
func formatOffset(d time.Duration) string {
	switch {
	case d > 0 && d%day == 0:
		return strconv.FormatInt(int64(d/day), 10) + "d"
	case d > 0 && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d > 0 && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d > 0 && d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}
