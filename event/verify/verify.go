// Package verify is the receiver's side of paygate's signed events: it checks a delivery's
// Paygate-Signature header against the endpoint's signing secret before the body is
// trusted.
//
//	func handle(w http.ResponseWriter, r *http.Request) {
//		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
//		if err := verify.Signature(body, r.Header.Get("Paygate-Signature"), secret, verify.DefaultTolerance, time.Now()); err != nil {
//			http.Error(w, "bad signature", http.StatusBadRequest)
//			return
//		}
//		// At least once: dedupe by the event id (Paygate-Event-Id) before acting on it.
//	}
package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// DefaultTolerance is how far a signature's timestamp may be from the receiver's clock.
const DefaultTolerance = 5 * time.Minute

// Errors of Signature.
var (
	// ErrMalformed: the header is not "t=<unix>,v1=<hex>[,v1=<hex>...]".
	ErrMalformed = errors.New("verify: malformed Paygate-Signature header")
	// ErrStale: the timestamp is further than the tolerance from now (a replay, or a
	// clock far off).
	ErrStale = errors.New("verify: the signature's timestamp is outside the tolerance")
	// ErrMismatch: no v1 signature matches the body under the secret.
	ErrMismatch = errors.New("verify: no signature matches")
)

// Signature checks header, a delivery's Paygate-Signature, for body under secret at now:
// its timestamp within tolerance of now, and one of its v1 signatures (two during a
// rotation of the secret) the HMAC-SHA256 under secret of "<t>.<body>", compared in
// constant time. It returns nil, or ErrMalformed, ErrStale or ErrMismatch.
func Signature(body []byte, header, secret string, tolerance time.Duration, now time.Time) error {
	var (
		ts   string
		sigs [][]byte
	)
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrMalformed
		}
		switch k {
		case "t":
			if ts != "" {
				return ErrMalformed
			}
			ts = v
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil || len(b) != sha256.Size {
				return ErrMalformed
			}
			sigs = append(sigs, b)
		}
	}
	if ts == "" || len(sigs) == 0 {
		return ErrMalformed
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || unix <= 0 {
		return ErrMalformed
	}
	t := time.Unix(unix, 0)
	if d := now.Sub(t); d > tolerance || d < -tolerance {
		return ErrStale
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	want := m.Sum(nil)
	match := false
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			match = true
		}
	}
	if !match {
		return ErrMismatch
	}
	return nil
}
