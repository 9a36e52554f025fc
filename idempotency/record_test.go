package idempotency

import (
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	fp := Fingerprint{1}
	later, earlier := now.Add(time.Second), now.Add(-time.Second)
	for _, tc := range []struct {
		name string
		rec  Record
		fp   Fingerprint
		want Verdict
	}{
		{"other body", Record{Fingerprint: Fingerprint{2}}, fp, Mismatch},
		{"other body while locked", Record{Fingerprint: Fingerprint{2}, LockedUntil: &later}, fp, Mismatch},
		{"stored answer", Record{Fingerprint: fp, ResponseStatus: 402, ResponseBody: []byte("{}")}, fp, Replay},
		{"held by a live request", Record{Fingerprint: fp, LockedUntil: &later}, fp, InUse},
		{"lock of a crashed request expired", Record{Fingerprint: fp, LockedUntil: &earlier}, fp, Proceed},
		{"bound, nothing stored", Record{Fingerprint: fp}, fp, Proceed},
		{"stored with its first 128 bits", Record{Fingerprint: Fingerprint{1}, ResponseStatus: 200}, Fingerprint{1, 15: 0, 16: 9, 31: 9}, Replay},
		{"other body in the first 128 bits", Record{Fingerprint: Fingerprint{1, 15: 1}}, Fingerprint{1, 16: 9}, Mismatch},
	} {
		if got := Decide(tc.rec, tc.fp, now); got != tc.want {
			t.Errorf("%s: Decide = %v, want %v", tc.name, got, tc.want)
		}
	}
}
