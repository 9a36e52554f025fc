package report

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"
)

// Columns are the CSV columns, in order. The order is stable: new columns
// are only ever appended.
var Columns = []string{
	"processor_account", "fingerprint", "network", "merchants", "merchant_ids",
	"attempts", "declines",
	"declines_never", "declines_fix_data", "declines_funds", "declines_issuer_transient", "declines_generic",
	"declines_category_1", "declines_category_2", "declines_category_3", "declines_category_4",
	"reattempts", "max_reattempts_30d", "max_declines_24h", "max_declines_30d",
	"reattempts_refused", "violations",
	"declines_authenticate", "violations_in_hindsight",
}

// MarshalJSON encodes r as a list object:
// {"object": "list", "from", "to", "data": [rows]}.
func (r Reattempts) MarshalJSON() ([]byte, error) {
	rows := r.Rows
	if rows == nil {
		rows = []Row{}
	}
	return json.Marshal(struct {
		Object string    `json:"object"`
		From   time.Time `json:"from"`
		To     time.Time `json:"to"`
		Data   []Row     `json:"data"`
	}{"list", r.From.UTC(), r.To.UTC(), rows})
}

// WriteJSON writes r as one JSON object and a newline.
func WriteJSON(w io.Writer, r Reattempts) error {
	return json.NewEncoder(w).Encode(r)
}

// WriteCSV writes r as CSV: a header row of [Columns], then one line per card.
// merchant_ids are separated by ";"; violations is a count (the JSON form
// lists them).
func WriteCSV(w io.Writer, r Reattempts) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(Columns); err != nil {
		return err
	}
	for _, row := range r.Rows {
		rec := []string{row.ProcessorAccount, row.Fingerprint, row.Network, itoa(row.Merchants),
			strings.Join(row.MerchantIDs, ";"), itoa(row.Attempts), itoa(row.Declines)}
		for _, cl := range classes[:csvClasses] {
			rec = append(rec, itoa(row.DeclinesByClass[cl]))
		}
		for _, cat := range categories {
			rec = append(rec, itoa(row.DeclinesByCategory[strconv.Itoa(int(cat))]))
		}
		rec = append(rec, itoa(row.Reattempts), itoa(row.MaxReattempts30d), itoa(row.MaxDeclines24h),
			itoa(row.MaxDeclines30d), itoa(row.ReattemptsRefused), itoa(row.Violations))
		for _, cl := range classes[csvClasses:] {
			rec = append(rec, itoa(row.DeclinesByClass[cl]))
		}
		rec = append(rec, itoa(row.ViolationsInHindsight))
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func itoa(n int) string { return strconv.Itoa(n) }
