package report_test

import (
	"fmt"
	"os"
	"time"

	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/report"
)

func ExampleBuild() {
	// A Visa card declined for lost card (category 1), then charged again anyway:
	// the enforcement should have refused the second attempt, and the report, which
	// recounts the history itself, says it was not.
	start := time.Date(2031, 3, 1, 0, 0, 0, 0, time.UTC)
	card := report.Card{
		ProcessorAccount: "acct_1",
		Fingerprint:      "fp_1",
		Network:          decline.Visa,
		Merchants:        []string{"m_1"},
		Attempts: []report.Attempt{
			{Attempt: decline.Attempt{Charge: "ch_lost", At: start.Add(time.Hour), Outcome: decline.Declined,
				Class: decline.Never, Network: decline.Visa}, Category: decline.CategoryNeverApprove},
			{Attempt: decline.Attempt{Charge: "ch_again", At: start.Add(2 * time.Hour), Outcome: decline.Approved,
				Network: decline.Visa}},
		},
	}
	q := report.Query{From: start, To: start.Add(24 * time.Hour)}
	rows := report.Build([]report.Card{card}, q, decline.DefaultCaps())
	for _, v := range rows[0].ViolationsDetail {
		fmt.Println(v.Charge, v.Rule)
	}
	_ = report.WriteCSV(os.Stdout, report.Reattempts{From: q.From, To: q.To, Rows: rows})
	// Output:
	// ch_again after_never
	// processor_account,fingerprint,network,merchants,merchant_ids,attempts,declines,declines_never,declines_fix_data,declines_funds,declines_issuer_transient,declines_generic,declines_category_1,declines_category_2,declines_category_3,declines_category_4,reattempts,max_reattempts_30d,max_declines_24h,max_declines_30d,reattempts_refused,violations,declines_authenticate,violations_in_hindsight
	// acct_1,fp_1,visa,1,m_1,2,1,1,0,0,0,0,1,0,0,0,1,1,0,0,0,1,0,0
}
