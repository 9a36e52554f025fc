package processor

import "testing"

func TestIntentFromJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		want       Intent
		wantErr    bool
	}{
		{"succeeded", `{"id":"pi_1","object":"payment_intent","status":"succeeded","amount":1999,"currency":"USD",
			"customer":"cus_1","payment_method":"pm_card_visa","created":1800000000,
			"metadata":{"paygate_charge_id":"ch_1","paygate_root_charge_id":"ch_0"}}`,
			Intent{ID: "pi_1", Status: "succeeded", Amount: 1999, Currency: "usd", Customer: "cus_1", PaymentMethod: "pm_card_visa",
				ChargeID: "ch_1", RootChargeID: "ch_0"}, false},
		{"declined", `{"id":"pi_2","object":"payment_intent","status":"requires_payment_method","amount":50,"currency":"usd",
			"last_payment_error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds","network_decline_code":"51"}}`,
			Intent{ID: "pi_2", Status: "requires_payment_method", Amount: 50, Currency: "usd",
				Decline: &Decline{Code: "card_declined", DeclineCode: "insufficient_funds", NetworkDeclineCode: "51"}}, false},
		{"not JSON", `{"id":`, Intent{}, true},
		{"no id", `{"object":"payment_intent"}`, Intent{}, true},
		{"another object", `{"id":"ch_1","object":"charge"}`, Intent{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := IntentFromJSON([]byte(tc.body))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error: got %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			got.Created = got.Created.UTC()
			tc.want.Created = got.Created
			if got.Decline != nil && tc.want.Decline != nil {
				if got.Decline.Code != tc.want.Decline.Code || got.Decline.DeclineCode != tc.want.Decline.DeclineCode ||
					got.Decline.NetworkDeclineCode != tc.want.Decline.NetworkDeclineCode {
					t.Fatalf("decline: got %+v, want %+v", got.Decline, tc.want.Decline)
				}
				got.Decline, tc.want.Decline = nil, nil
			}
			if got.Decline != tc.want.Decline || got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
