package charge

import (
	"context"
	"fmt"
	"time"

	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/idempotency"
)

// nextReattempt returns the next step of c's automatic reattempt chain after its decline,
// given the network rules' verdict on reattempting now: the next slot of the class's
// schedule, or nil when the chain stops (a never class, fix data first, the cap, the
// schedule spent) or c is not on automatic reattempts.
func nextReattempt(c *Charge, v decline.Verdict, declinedAt time.Time) *NextReattempt {
	if c.ReattemptMode != ReattemptAuto {
		return nil
	}
	switch {
	case v.Allowed:
		return &NextReattempt{ChargeID: NewID(), At: declinedAt}
	case v.Reason == decline.ReasonTooEarly && !v.NotBefore.IsZero():
		return &NextReattempt{ChargeID: NewID(), At: v.NotBefore}
	}
	return nil
}

// AutoKey is the inbound idempotency key under which the automatic reattempt of a declined
// charge runs: a job run again (a replay) resumes the same reattempt, never a second one.
func AutoKey(declinedID string) string { return "auto-reattempt:" + declinedID }

// AutoReattempt runs the scheduled reattempt of a declined charge of an automatic chain,
// through the same engine and network rules as a merchant's own reattempt, as the charge
// nextID. It returns the reattempt's answer; a refusal by the rules ends the chain (a
// *ReattemptRefusedError).
func (s *Service) AutoReattempt(ctx context.Context, merchantID, declinedID, nextID string) (Response, error) {
	orig, err := s.store.Charge(ctx, merchantID, declinedID)
	if err != nil {
		return Response{}, err
	}
	if orig.ReattemptMode != ReattemptAuto {
		return Response{}, fmt.Errorf("charge: %s is not on automatic reattempts", declinedID)
	}
	key := AutoKey(declinedID)
	fp, err := idempotency.FingerprintOf("POST", "/internal/auto-reattempt/"+declinedID, []byte(`{"charge":"`+nextID+`"}`))
	if err != nil {
		return Response{}, err
	}
	return s.reattempt(ctx, orig, ReattemptParams{MerchantID: merchantID, Key: key, Fingerprint: fp,
		ChargeID: declinedID, Timeout: 8 * time.Second}, nextID)
}
