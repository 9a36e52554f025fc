package sim

import "testing"

func TestParseSimMethod(t *testing.T) {
	t.Parallel()
	cases := []struct {
		id                            string
		ok                            bool
		kind                          outcomeKind
		declineCode, ndc, mac, advice string
		brand, last4                  string
		expMonth, expYear, first      int
		settleDecline                 bool
	}{
		{id: "pm_sim_approve", ok: true, kind: approve, brand: "visa", last4: "4242", expMonth: 12, expYear: 2034},
		{id: "pm_sim_approve_amex", ok: true, kind: approve, brand: "amex", last4: "8431", expMonth: 12, expYear: 2034},
		{id: "pm_sim_requires_action_mc", ok: true, kind: authenticate, brand: "mastercard", last4: "4444", expMonth: 12, expYear: 2034},
		{id: "pm_sim_processing", ok: true, kind: processing, brand: "visa", last4: "4242", expMonth: 12, expYear: 2034},
		{id: "pm_sim_processing_decline_insufficient_funds_visa_51", ok: true, kind: processing, settleDecline: true,
			declineCode: "insufficient_funds", ndc: "51", brand: "visa", last4: "4242", expMonth: 12, expYear: 2034},
		{id: "pm_sim_decline_do_not_honor_visa_05", ok: true, kind: declined, declineCode: "do_not_honor", ndc: "05",
			brand: "visa", last4: "4242", expMonth: 12, expYear: 2034},
		{id: "pm_sim_decline_incorrect_cvc_visa_n7", ok: true, kind: declined, declineCode: "incorrect_cvc", ndc: "N7",
			brand: "visa", last4: "4242", expMonth: 12, expYear: 2034},
		{id: "pm_sim_decline_do_not_try_again_mc_mac03", ok: true, kind: declined, declineCode: "do_not_try_again", mac: "03",
			brand: "mastercard", last4: "4444", expMonth: 12, expYear: 2034},
		{id: "pm_sim_decline_insufficient_funds_mac24", ok: true, kind: declined, declineCode: "insufficient_funds", mac: "24",
			brand: "mastercard", last4: "4444", expMonth: 12, expYear: 2034},
		{id: "pm_sim_decline_lost_card_card3_exp0429_first2_advice_do_not_try_again", ok: true, kind: declined,
			declineCode: "lost_card", advice: "do_not_try_again", brand: "visa", last4: "0003", expMonth: 4, expYear: 2029, first: 2},
		{id: "pm_sim_decline_card_velocity_exceeded", ok: true, kind: declined, declineCode: "card_velocity_exceeded",
			brand: "visa", last4: "4242", expMonth: 12, expYear: 2034},
		{id: "pm_sim_decline"},
		{id: "pm_sim_decline_"},
		{id: "pm_sim_decline_visa"},
		{id: "pm_sim_decline_Do_Not_Honor"},
		{id: "pm_sim_approve_visa_visa"},
		{id: "pm_sim_approve_mac03"},
		{id: "pm_sim_decline_x_visa_mac03"},
		{id: "pm_sim_decline_x_exp1330"},
		{id: "pm_sim_decline_x_first0"},
		{id: "pm_sim_decline_x_advice"},
		{id: "pm_sim_decline_x_advice_Try"},
		{id: "pm_sim_requires"},
		{id: "pm_sim_refund"},
		{id: "pm_sim_approve_unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			t.Parallel()
			m, err := parseSimMethod(tc.id)
			if ok := err == nil; ok != tc.ok {
				t.Fatalf("got err %v, want ok=%v", err, tc.ok)
			}
			if !tc.ok {
				return
			}
			d := m.decline
			got := []any{m.kind, d.declineCode, d.networkDeclineCode, d.networkAdviceCode, d.adviceCode,
				m.card.brand, m.card.last4, m.card.expMonth, m.card.expYear, m.first, m.settleDecline}
			want := []any{tc.kind, tc.declineCode, tc.ndc, tc.mac, tc.advice,
				tc.brand, tc.last4, tc.expMonth, tc.expYear, tc.first, tc.settleDecline}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("got %v, want %v", got, want)
					break
				}
			}
		})
	}
}

func TestStripeCatalogCoversDeclineSuffixes(t *testing.T) {
	t.Parallel()
	for id, m := range stripeTestMethods {
		if m.kind == declined && m.decline.declineCode == "" {
			t.Errorf("%s: got a decline without a code", id)
		}
		if m.card.brand == "" || len(m.card.last4) != 4 {
			t.Errorf("%s: got card %+v, want a brand and last4", id, m.card)
		}
	}
}
