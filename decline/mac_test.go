package decline

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseMAC(t *testing.T) {
	t.Parallel()

	tests := []struct {
		in      string
		want    MAC
		wantErr bool
	}{
		{"03", MACDoNotTryAgain, false},
		{"3", MACDoNotTryAgain, false},
		{" 24 ", 24, false},
		{"30", MACRetryAfter10Days, false},
		{"99", 99, false},
		{"", MACNone, false},
		{"00", MACNone, false},
		{"100", MACNone, true},
		{"0x", MACNone, true},
		{"-1", MACNone, true},
		{"+3", MACNone, true},
		{"٣", MACNone, true}, // an Arabic-Indic digit
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseMAC(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error: got %v, want error %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrInvalidMAC) {
				t.Errorf("error: got %v, want one wrapping ErrInvalidMAC", err)
			}
			if got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestMACDelay(t *testing.T) {
	t.Parallel()

	want := map[MAC]time.Duration{
		24: time.Hour,
		25: 24 * time.Hour,
		26: 48 * time.Hour,
		27: 96 * time.Hour,
		28: 144 * time.Hour,
		29: 192 * time.Hour,
		30: 240 * time.Hour,
	}
	for m := MAC(0); m < 100; m++ {
		if got := MACDelay(m); got != want[m] {
			t.Errorf("MACDelay(%02d): got %v, want %v", m, got, want[m])
		}
	}
}

func TestMACText(t *testing.T) {
	t.Parallel()

	type row struct {
		MAC MAC `json:"mac,omitempty"`
	}
	b, err := json.Marshal(row{MAC: 3})
	if err != nil || string(b) != `{"mac":"03"}` {
		t.Errorf("marshal: got %s, %v, want %s", b, err, `{"mac":"03"}`)
	}
	b, _ = json.Marshal(row{})
	if string(b) != `{}` {
		t.Errorf("marshal none: got %s, want {}", b)
	}
	var r row
	if err := json.Unmarshal([]byte(`{"mac":"27"}`), &r); err != nil || r.MAC != 27 {
		t.Errorf("unmarshal: got %d, %v, want 27, nil", r.MAC, err)
	}
	if err := json.Unmarshal([]byte(`{"mac":"abc"}`), &r); err == nil {
		t.Errorf("unmarshal garbage: got nil error, want one")
	}
}

func FuzzParseMAC(f *testing.F) {
	for _, s := range []string{"", "0", "01", "03", "21", "24", "30", "99", "100", " 2", "2 ", "a", "\x00", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMAC(s)
		if err != nil {
			if m != MACNone {
				t.Fatalf("error with value: got %d, want 0", m)
			}
			if !errors.Is(err, ErrInvalidMAC) {
				t.Fatalf("error: got %v, want one wrapping ErrInvalidMAC", err)
			}
			return
		}
		if m > 99 {
			t.Fatalf("got %d, want at most 99", m)
		}
		// The accepted strings are exactly one or two ASCII digits, spaces
		// around them ignored, or nothing.
		trimmed := strings.TrimSpace(s)
		if trimmed != "" {
			n, convErr := strconv.Atoi(trimmed)
			if convErr != nil || len(trimmed) > 2 || trimmed[0] == '+' || trimmed[0] == '-' {
				t.Fatalf("accepted %q, want an error", s)
			}
			if MAC(n) != m {
				t.Fatalf("got %d, want %d", m, n)
			}
		}
		// String round-trips.
		back, err := ParseMAC(m.String())
		if err != nil || back != m {
			t.Fatalf("round trip of %d: got %d, %v", m, back, err)
		}
		if m != MACNone && len(m.String()) != 2 {
			t.Fatalf("String: got %q, want two digits", m.String())
		}
	})
}
