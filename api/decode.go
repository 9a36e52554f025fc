package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/paygate/paygate/charge"
)

// chargeBody is the JSON body of POST /v1/charges.
type chargeBody struct {
	Amount        json.RawMessage   `json:"amount"`
	Currency      *string           `json:"currency"`
	PaymentMethod *string           `json:"payment_method"`
	Customer      *string           `json:"customer"`
	Reference     *string           `json:"reference"`
	Initiator     *string           `json:"initiator"`
	Reattempt     *string           `json:"reattempt"`
	Metadata      map[string]string `json:"metadata"`
}

// decodeChargeRequest turns a body into a validated charge request. It refuses anything
// that is not exactly one JSON object of known fields, and any card-number-like value
// anywhere in the body, without echoing it.
func decodeChargeRequest(body []byte, lim charge.Limits) (charge.Request, *Error) {
	var b chargeBody
	if err := decodeStrict(body, &b); err != nil {
		return charge.Request{}, err
	}
	var r charge.Request
	if len(b.Amount) == 0 || string(b.Amount) == "null" {
		return r, invalid(charge.CodeParameterMissing, "amount", "amount is required")
	}
	// Only a JSON integer literal: not a string, not a fraction, not an exponent.
	lit := string(b.Amount)
	amount, err := strconv.ParseInt(lit, 10, 64)
	if err != nil {
		return r, invalid(charge.CodeParameterInvalid, "amount", "amount must be an integer in minor units")
	}
	r.Amount = amount
	r.Currency = deref(b.Currency)
	r.PaymentMethod = deref(b.PaymentMethod)
	r.Customer = deref(b.Customer)
	r.Reference = deref(b.Reference)
	r.Initiator = charge.Initiator(deref(b.Initiator))
	r.ReattemptMode = charge.ReattemptMode(deref(b.Reattempt))
	r.Metadata = b.Metadata
	if err := r.Validate(lim); err != nil {
		var ve *charge.ValidationError
		if errors.As(err, &ve) {
			return r, invalid(ve.Code, ve.Param, ve.Message)
		}
		return r, invalid(charge.CodeParameterInvalid, "", err.Error())
	}
	return r, nil
}

// decodeStrict decodes exactly one JSON object into v, refusing unknown fields. A body
// holding a card number anywhere is refused first, so that no later error (an unknown
// parameter's name, say) can echo one.
func decodeStrict(body []byte, v any) *Error {
	if err := refuseCardData(body); err != nil {
		return err
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return invalid("body_missing", "", "the request body must be a JSON object")
	}
	if trimmed[0] != '{' && json.Valid(trimmed) {
		return invalid(charge.CodeParameterInvalid, "", "the request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field == "":
			return invalid(charge.CodeParameterInvalid, "", "the request body must be a JSON object")
		case errors.As(err, &typeErr):
			return invalid(charge.CodeParameterInvalid, typeErr.Field, fmt.Sprintf("%s has the wrong type", typeErr.Field))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return invalid("parameter_unknown", field, fmt.Sprintf("unknown parameter %q", field))
		default:
			return invalid("invalid_json", "", "the request body is not valid JSON")
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("invalid_json", "", "the request body must hold one JSON object and nothing after it")
	}
	return nil
}

// refuseCardData refuses a body in which any string, number or key looks like a card
// number. It reads the body's token stream, so that escapes (\u0034...) cannot hide digits
// and a duplicate key cannot hide the value it overrides: every key and value is checked,
// whichever one a decoder keeps. A body that is not JSON is checked up to where it stops
// being JSON; decodeStrict then refuses it without echoing it.
func refuseCardData(body []byte) *Error {
	if holdsCardNumber(body) {
		return errCardData
	}
	return nil
}

// holdsCardNumber reports whether any key, string or number of the JSON text in body looks
// like a card number.
func holdsCardNumber(body []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return false // io.EOF, or the end of what is JSON
		}
		switch t := tok.(type) {
		case string:
			if charge.ContainsCardNumber(t) {
				return true
			}
		case json.Number:
			if charge.ContainsCardNumber(t.String()) {
				return true
			}
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
