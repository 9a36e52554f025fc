package api

import (
	"encoding/json"
	"testing"

	"github.com/paygate/paygate/charge"
)

var lim = charge.Limits{MaxAmount: 99_999_999}

func TestDecodeChargeRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		wantCode   string
	}{
		{"valid", `{"amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`, ""},
		{"valid merchant auto", `{"amount":1,"currency":"eur","payment_method":"pm_x","customer":"cus_1","initiator":"merchant","reattempt":"auto","reference":"r","metadata":{"a":"b"}}`, ""},
		{"missing amount", `{"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`, "parameter_missing"},
		{"null amount", `{"amount":null,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`, "parameter_missing"},
		{"string amount", `{"amount":"1000","currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`, "parameter_invalid"},
		{"exponent amount", `{"amount":1e3,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`, "parameter_invalid"},
		{"huge amount", `{"amount":99999999999999999999,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`, "parameter_invalid"},
		{"metadata not strings", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"a":1}}`, "parameter_invalid"},
		{"card in key", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"4242424242424242":"x"}}`, "card_data_not_accepted"},
		{"card as number", `{"amount":4242424242424242,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`, "card_data_not_accepted"},
		{"not an object", `"hello"`, "parameter_invalid"},
		{"array", `[]`, "parameter_invalid"},
		{"null", `null`, "parameter_invalid"},
		{"card behind a duplicate metadata key", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"n":"4242424242424242","n":"x"}}`, "card_data_not_accepted"},
		{"card behind a duplicate field", `{"reference":"4242424242424242","amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","reference":"r"}`, "card_data_not_accepted"},
		{"card behind a duplicate object", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"a":"4242 4242 4242 4242"},"metadata":{}}`, "card_data_not_accepted"},
		{"card after the object", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"} "4242424242424242"`, "card_data_not_accepted"},
		{"card as an unknown field's name", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","4111111111111111":"x"}`, "card_data_not_accepted"},
		{"card with double spaces", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"n":"4242  4242  4242  4242"}}`, "card_data_not_accepted"},
		{"NUL in metadata value", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"a":"x\u0000y"}}`, "parameter_invalid"},
		{"NUL in metadata key", `{"amount":1,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer","metadata":{"a\u0000":"x"}}`, "parameter_invalid"},
	} {
		_, err := decodeChargeRequest([]byte(tc.body), lim)
		switch {
		case tc.wantCode == "" && err != nil:
			t.Errorf("%s: got %v, want valid", tc.name, err)
		case tc.wantCode != "" && (err == nil || err.Code != tc.wantCode):
			t.Errorf("%s: got %v, want %s", tc.name, err, tc.wantCode)
		}
	}
}

// FuzzDecodeChargeRequest: whatever the body, the decoder answers a 4xx error or a request
// that is valid and holds no card number.
func FuzzDecodeChargeRequest(f *testing.F) {
	for _, s := range []string{
		`{"amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`,
		`{"amount":1,"currency":"eur","payment_method":"pm_x","customer":"cus_1","initiator":"merchant","reattempt":"auto","metadata":{"a":"b"}}`,
		`{"amount":-1}`, `[]`, `null`, `{"metadata":{"n":"4242 4242 4242 4242"}}`, `{"amount":1e400}`, "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := decodeChargeRequest(body, lim)
		if err != nil {
			if err.Status < 400 || err.Status > 499 || err.Code == "" || err.Message == "" {
				t.Fatalf("decode error outside the 4xx envelope: %+v", err)
			}
			return
		}
		if verr := r.Validate(lim); verr != nil {
			t.Fatalf("accepted an invalid request: %v", verr)
		}
		b, _ := json.Marshal(r)
		if holdsCardNumber(b) || charge.ContainsCardNumber(r.PaymentMethod) {
			t.Fatalf("accepted card data: %s", b)
		}
	})
}
