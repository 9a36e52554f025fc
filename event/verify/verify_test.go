package verify_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/event"
	"github.com/paygate/paygate/event/verify"
)

func TestSignature(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"evt_x_o","object":"event"}`)
	const secret, old = "whsec_new", "whsec_old"
	tests := []struct {
		name   string
		header string
		secret string
		want   error
	}{
		{"signed", event.Sign(body, now, secret), secret, nil},
		{"two secrets during a rotation, new", event.Sign(body, now, secret, old), secret, nil},
		{"two secrets during a rotation, old", event.Sign(body, now, secret, old), old, nil},
		{"bad secret", event.Sign(body, now, secret), "whsec_wrong", verify.ErrMismatch},
		{"other body", event.Sign([]byte(`{}`), now, secret), secret, verify.ErrMismatch},
		{"stale", event.Sign(body, now.Add(-6*time.Minute), secret), secret, verify.ErrStale},
		{"from the future", event.Sign(body, now.Add(6*time.Minute), secret), secret, verify.ErrStale},
		{"within tolerance", event.Sign(body, now.Add(-4*time.Minute), secret), secret, nil},
		{"empty", "", secret, verify.ErrMalformed},
		{"no signature", "t=1800000000", secret, verify.ErrMalformed},
		{"no timestamp", "v1=" + strings.Repeat("ab", 32), secret, verify.ErrMalformed},
		{"short signature", "t=1800000000,v1=abcd", secret, verify.ErrMalformed},
		{"two timestamps", "t=1800000000,t=1800000001,v1=" + strings.Repeat("ab", 32), secret, verify.ErrMalformed},
		{"timestamp not a number", "t=soon,v1=" + strings.Repeat("ab", 32), secret, verify.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := verify.Signature(body, tt.header, tt.secret, verify.DefaultTolerance, now)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func FuzzSignature(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	f.Add([]byte(`{}`), event.Sign([]byte(`{}`), now, "whsec_a"))
	f.Add([]byte(`x`), "t=1,v1=00")
	f.Add([]byte(``), ",,,=")
	f.Fuzz(func(t *testing.T, body []byte, header string) {
		if verify.Signature(body, header, "whsec_a", verify.DefaultTolerance, now) != nil {
			return
		}
		// A header that verifies carries the body's MAC under the secret for its own
		// timestamp.
		var ts string
		for _, part := range strings.Split(header, ",") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(part), "t="); ok {
				ts = v
			}
		}
		if !strings.Contains(strings.ToLower(header), event.MAC("whsec_a", ts, body)) {
			t.Fatalf("header %q verified without the body's MAC", header)
		}
	})
}

func ExampleSignature() {
	body := []byte(`{"id":"evt_abc_o","object":"event","type":"charge.succeeded"}`)
	now := time.Unix(1_800_000_000, 0)
	header := event.Sign(body, now, "whsec_secret")
	fmt.Println(verify.Signature(body, header, "whsec_secret", verify.DefaultTolerance, now))
	fmt.Println(verify.Signature(body, header, "whsec_other", verify.DefaultTolerance, now))
	fmt.Println(verify.Signature(body, header, "whsec_secret", verify.DefaultTolerance, now.Add(time.Hour)))
	// Output:
	// <nil>
	// verify: no signature matches
	// verify: the signature's timestamp is outside the tolerance
}
