package charge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/paygate/paygate/idempotency"
)

// ErrNotDeclined is returned by Reattempt for a charge that is not declined: only a declined
// charge can be reattempted.
var ErrNotDeclined = errors.New("charge: only a declined charge can be reattempted")

// ReattemptParams is one keyed request to reattempt a declined charge.
type ReattemptParams struct {
	MerchantID  string
	Key         string
	Fingerprint idempotency.Fingerprint
	// ChargeID is the declined charge.
	ChargeID string
	// PaymentMethod replaces the declined charge's payment method when set (new card data
	// clears a fix-data decline).
	PaymentMethod string
	Timeout       time.Duration
}

// Reattempt runs a merchant-initiated reattempt of a declined charge: a new charge with
// reattempt_of set, in the declined charge's chain, under a new processor key (the declined
// PaymentIntent's key would only replay the decline). The network rules and the class's
// schedule decide first; a refusal is a *ReattemptRefusedError. It returns ErrNotFound for
// an unknown charge and ErrNotDeclined for one that is not declined.
func (s *Service) Reattempt(ctx context.Context, p ReattemptParams) (Response, error) {
	orig, err := s.store.Charge(ctx, p.MerchantID, p.ChargeID)
	if err != nil {
		return Response{}, err
	}
	return s.reattempt(ctx, orig, p, "")
}

// reattempt runs a reattempt of orig; id fixes the new charge's id (empty: a new one).
func (s *Service) reattempt(ctx context.Context, orig *Charge, p ReattemptParams, id string) (Response, error) {
	if orig.Status != StatusDeclined {
		return Response{}, fmt.Errorf("%w: %s is %s", ErrNotDeclined, orig.ID, orig.Status)
	}
	req := Request{
		Amount:        orig.Amount,
		Currency:      orig.Currency,
		PaymentMethod: orig.PaymentMethod,
		Customer:      orig.Customer,
		Reference:     orig.Reference,
		Initiator:     orig.Initiator,
		ReattemptMode: orig.ReattemptMode,
		Metadata:      orig.Metadata,
	}
	if orig.Customer != "" {
		// The cardholder is not present: a saved card charged by the merchant.
		req.Initiator = InitiatorMerchant
	}
	if p.PaymentMethod != "" {
		req.PaymentMethod = p.PaymentMethod
	}
	chain := orig.Chain
	if chain == "" {
		chain = orig.ID
	}
	return s.create(ctx, CreateParams{MerchantID: p.MerchantID, Key: p.Key, Fingerprint: p.Fingerprint,
		Request: req, Timeout: p.Timeout, id: id}, orig.ID, chain)
}
