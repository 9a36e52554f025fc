package charge

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

func TestRequestValidate(t *testing.T) {
	t.Parallel()
	valid := func() Request {
		return Request{Amount: 1000, Currency: "usd", PaymentMethod: "pm_card_visa", Initiator: InitiatorCustomer}
	}
	for _, tc := range []struct {
		name      string
		mutate    func(*Request)
		wantParam string
		wantCode  string
	}{
		{"valid", func(*Request) {}, "", ""},
		{"zero amount", func(r *Request) { r.Amount = 0 }, "amount", CodeParameterInvalid},
		{"negative amount", func(r *Request) { r.Amount = -5 }, "amount", CodeParameterInvalid},
		{"amount over max", func(r *Request) { r.Amount = 100_000_001 }, "amount", CodeAmountTooLarge},
		{"no currency", func(r *Request) { r.Currency = "" }, "currency", CodeParameterMissing},
		{"upper currency", func(r *Request) { r.Currency = "USD" }, "currency", CodeParameterInvalid},
		{"unknown currency", func(r *Request) { r.Currency = "xyz" }, "currency", CodeParameterInvalid},
		{"no payment method", func(r *Request) { r.PaymentMethod = "" }, "payment_method", CodeParameterMissing},
		{"raw card as pm", func(r *Request) { r.PaymentMethod = "card_123" }, "payment_method", CodeParameterInvalid},
		{"bad customer", func(r *Request) { r.Customer = "bob" }, "customer", CodeParameterInvalid},
		{"no initiator", func(r *Request) { r.Initiator = "" }, "initiator", CodeParameterMissing},
		{"bad initiator", func(r *Request) { r.Initiator = "robot" }, "initiator", CodeParameterInvalid},
		{"merchant without customer", func(r *Request) { r.Initiator = InitiatorMerchant }, "customer", CodeParameterMissing},
		{"merchant with customer", func(r *Request) { r.Initiator = InitiatorMerchant; r.Customer = "cus_1" }, "", ""},
		{"auto for customer", func(r *Request) { r.ReattemptMode = ReattemptAuto }, "reattempt", CodeParameterInvalid},
		{"auto for merchant", func(r *Request) {
			r.Initiator, r.Customer, r.ReattemptMode = InitiatorMerchant, "cus_1", ReattemptAuto
		}, "", ""},
		{"bad reattempt", func(r *Request) { r.ReattemptMode = "sometimes" }, "reattempt", CodeParameterInvalid},
		{"long reference", func(r *Request) { r.Reference = strings.Repeat("r", 256) }, "reference", CodeParameterInvalid},
		{"control char reference", func(r *Request) { r.Reference = "a\nb" }, "reference", CodeParameterInvalid},
		{"metadata key too long", func(r *Request) { r.Metadata = map[string]string{strings.Repeat("k", 41): "v"} }, "metadata", CodeParameterInvalid},
		{"NUL in metadata value", func(r *Request) { r.Metadata = map[string]string{"k": "a\x00b"} }, "metadata", CodeParameterInvalid},
		{"NUL in metadata key", func(r *Request) { r.Metadata = map[string]string{"k\x00": "v"} }, "metadata", CodeParameterInvalid},
		{"metadata value too long", func(r *Request) { r.Metadata = map[string]string{"k": strings.Repeat("v", 501)} }, "metadata[k]", CodeParameterInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := valid()
			tc.mutate(&r)
			err := r.Validate(Limits{MaxAmount: 100_000_000})
			if tc.wantParam == "" {
				if err != nil {
					t.Fatalf("Validate: got %v, want nil", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate: got %v, want *ValidationError", err)
			}
			if ve.Param != tc.wantParam || ve.Code != tc.wantCode {
				t.Fatalf("Validate: got param %q code %q, want %q %q", ve.Param, ve.Code, tc.wantParam, tc.wantCode)
			}
		})
	}
}

func TestNewID(t *testing.T) {
	t.Parallel()
	a, b := NewID(), NewID()
	if a == b || !strings.HasPrefix(a, "ch_") || len(a) != 29 {
		t.Fatalf("NewID: got %q and %q, want two distinct ch_ ids of 29 characters", a, b)
	}
	if shape := regexp.MustCompile(`^ch_[a-z2-7]{26}$`); !shape.MatchString(a) {
		t.Fatalf("NewID: got %q, want %s", a, shape)
	}
	if ProcessorKey(a) != "pg_"+a {
		t.Fatalf("ProcessorKey(%q) = %q", a, ProcessorKey(a))
	}
}
