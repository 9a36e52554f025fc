package event_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/paygate/paygate/event"
	"github.com/paygate/paygate/retry"
)

func TestID(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"o", "s", "1", "9223372036854775807"} {
		id := event.ID("ch_abc234", key)
		ch, k, ok := event.ParseID(id)
		if !ok || ch != "ch_abc234" || k != key {
			t.Fatalf("ParseID(%q): got %q %q %v, want ch_abc234 %q", id, ch, k, ok, key)
		}
	}
	for _, bad := range []string{"", "evt_", "evt_abc", "evt_abc_", "evt__o", "ch_abc_o", "evt_ab-c_o", "evt_abc_x",
		"evt_abc_1a", "evt_abc_12345678901234567890", "evt_ABC_o"} {
		if _, _, ok := event.ParseID(bad); ok {
			t.Fatalf("ParseID(%q): got ok, want refused", bad)
		}
	}
}

func FuzzParseID(f *testing.F) {
	f.Add("evt_abc_o")
	f.Add("evt_a_b_12")
	f.Fuzz(func(t *testing.T, s string) {
		ch, key, ok := event.ParseID(s)
		if ok && event.ID(ch, key) != s {
			t.Fatalf("ParseID(%q) = %q %q, whose ID is %q", s, ch, key, event.ID(ch, key))
		}
	})
}

func TestBody(t *testing.T) {
	t.Parallel()
	b, err := event.Body(event.Event{ID: "evt_a_o", Type: event.ChargeSucceeded, Created: time.Unix(1800000000, 0)},
		[]byte(`{"id":"ch_a"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"evt_a_o","object":"event","type":"charge.succeeded","created":1800000000,"data":{"object":{"id":"ch_a"}}}`
	if string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	resolve := func(addrs ...string) event.Resolver {
		return func(context.Context, string) ([]netip.Addr, error) {
			var out []netip.Addr
			for _, a := range addrs {
				out = append(out, netip.MustParseAddr(a))
			}
			return out, nil
		}
	}
	public := resolve("93.184.216.34")
	tests := []struct {
		name      string
		url       string
		allowHTTP bool
		resolve   event.Resolver
		code      string // "" accepted
	}{
		{"https public", "https://hooks.example.com/paygate", false, public, ""},
		{"https with port", "https://hooks.example.com:8443/x", false, public, ""},
		{"http refused", "http://hooks.example.com/", false, public, "url_insecure"},
		{"http public even when allowed", "http://hooks.example.com/", true, public, "url_insecure"},
		{"http loopback allowed", "http://127.0.0.1:8081/hook", true, nil, ""},
		{"http localhost name allowed", "http://localhost:8081/hook", true, resolve("127.0.0.1", "::1"), ""},
		{"http loopback not allowed", "http://127.0.0.1:8081/hook", false, nil, "url_insecure"},
		{"https loopback", "https://127.0.0.1/", true, nil, "url_forbidden"},
		{"private 10/8", "https://10.0.0.5/", false, nil, "url_forbidden"},
		{"private 192.168", "https://192.168.1.1/", false, nil, "url_forbidden"},
		{"private 172.16", "https://172.16.0.1/", false, nil, "url_forbidden"},
		{"metadata link-local", "https://169.254.169.254/latest/meta-data", false, nil, "url_forbidden"},
		{"metadata alibaba", "https://100.100.100.200/", false, nil, "url_forbidden"},
		{"cgnat", "https://100.64.1.1/", false, nil, "url_forbidden"},
		{"unspecified", "https://0.0.0.0/", false, nil, "url_forbidden"},
		{"ipv6 loopback", "https://[::1]/", false, nil, "url_forbidden"},
		{"ipv6 unique local", "https://[fd00::1]/", false, nil, "url_forbidden"},
		{"ipv4-mapped private", "https://[::ffff:10.0.0.1]/", false, nil, "url_forbidden"},
		{"name resolving private", "https://internal.example.com/", false, resolve("10.1.2.3"), "url_forbidden"},
		{"name resolving to one private among public", "https://mixed.example.com/", false,
			resolve("93.184.216.34", "192.168.0.1"), "url_forbidden"},
		{"unresolvable now: checked at each dial", "https://later.example.com/", false, func(context.Context, string) ([]netip.Addr, error) {
			return nil, errors.New("no such host")
		}, ""},
		{"unresolvable over http", "http://later.example.com/", true, func(context.Context, string) ([]netip.Addr, error) {
			return nil, errors.New("no such host")
		}, "url_insecure"},
		{"ftp", "ftp://hooks.example.com/", false, public, "url_invalid"},
		{"relative", "/hooks", false, public, "url_invalid"},
		{"user info", "https://user:pw@hooks.example.com/", false, public, "url_invalid"},
		{"fragment", "https://hooks.example.com/#x", false, public, "url_invalid"},
		{"space", "https://hooks.example.com/a b", false, public, "url_invalid"},
		{"bad port", "https://hooks.example.com:99999/", false, public, "url_invalid"},
		{"empty", "", false, public, "url_invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := event.CheckURL(context.Background(), tt.url, tt.allowHTTP, tt.resolve)
			var uerr *event.URLError
			switch {
			case tt.code == "" && err != nil:
				t.Fatalf("got %v, want accepted", err)
			case tt.code != "" && (!errors.As(err, &uerr) || uerr.Code != tt.code):
				t.Fatalf("got %v, want %s", err, tt.code)
			}
		})
	}
}

// TestDialer: the dial-time check refuses what registration would, whatever the name
// resolved to then (DNS rebinding).
func TestDialer(t *testing.T) {
	t.Parallel()
	ctl := event.Dialer(false).Control
	for addr, ok := range map[string]bool{"93.184.216.34:443": true, "127.0.0.1:80": false, "10.0.0.1:443": false,
		"169.254.169.254:80": false, "[::1]:443": false, "[2606:2800:220:1::1]:443": true} {
		if err := ctl("tcp", addr, nil); (err == nil) != ok {
			t.Fatalf("dial %s: got %v, want allowed %v", addr, err, ok)
		}
	}
	if err := event.Dialer(true).Control("tcp", "127.0.0.1:8080", nil); err != nil {
		t.Fatalf("loopback with http allowed: got %v", err)
	}
}

func TestScheduleNext(t *testing.T) {
	t.Parallel()
	s := event.Schedule{Backoff: retry.Backoff{Base: time.Second, Cap: 8 * time.Second}, RetryAfterCap: time.Minute,
		Window: time.Hour}
	start := time.Unix(1800000000, 0)
	r := rand.New(rand.NewPCG(1, 2))
	for failures, ceiling := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second,
		4: 8 * time.Second, 10: 8 * time.Second} {
		for range 50 {
			p := s.Next(failures, start, start.Add(time.Minute), 0, r)
			if p.Dead || p.Ceiling != ceiling || p.Delay < 0 || p.Delay >= ceiling {
				t.Fatalf("after %d failures: got %+v, want a delay in [0, %s)", failures, p, ceiling)
			}
		}
	}
	// Full jitter: the delays are spread below the ceiling, not at it.
	seen := map[time.Duration]bool{}
	for range 20 {
		seen[s.Next(4, start, start, 0, r).Delay] = true
	}
	if len(seen) < 10 {
		t.Fatalf("20 draws gave %d distinct delays, want jitter", len(seen))
	}
	// A Retry-After longer than the backoff is honoured, up to its cap.
	if p := s.Next(1, start, start, 30*time.Second, r); p.Delay != 30*time.Second {
		t.Fatalf("Retry-After 30s: got %s", p.Delay)
	}
	if p := s.Next(1, start, start, time.Hour, r); p.Delay != time.Minute {
		t.Fatalf("Retry-After 1h: got %s, want the cap of 1m", p.Delay)
	}
	// No try after the window: dead.
	if p := s.Next(3, start, start.Add(time.Hour-time.Millisecond), 10*time.Second, r); !p.Dead {
		t.Fatalf("at the window's end: got %+v, want dead", p)
	}
}

func TestEndpointSecrets(t *testing.T) {
	t.Parallel()
	now := time.Unix(1800000000, 0)
	until := now.Add(event.RotationOverlap)
	e := event.Endpoint{Secret: "whsec_new", Previous: "whsec_old", PreviousExpiresAt: &until}
	if got := e.Secrets(now); len(got) != 2 || got[0] != "whsec_new" || got[1] != "whsec_old" {
		t.Fatalf("during the rotation: got %v", got)
	}
	if got := e.Secrets(until); len(got) != 1 {
		t.Fatalf("after the overlap: got %v, want the new secret alone", got)
	}
	if s := event.NewSecret(); len(s) < 40 || s[:6] != "whsec_" {
		t.Fatalf("NewSecret: got %q", s)
	}
}

func TestSignHeader(t *testing.T) {
	t.Parallel()
	h := event.Sign([]byte(`{}`), time.Unix(1800000000, 0), "whsec_a", "whsec_b")
	want := "t=1800000000,v1=" + event.MAC("whsec_a", "1800000000", []byte(`{}`)) + ",v1=" +
		event.MAC("whsec_b", "1800000000", []byte(`{}`))
	if h != want {
		t.Fatalf("got %s, want %s", h, want)
	}
}
