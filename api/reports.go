package api

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/paygate/paygate/report"
)

// Reports builds the operators' and auditors' reports (a *report.Service).
type Reports interface {
	// Reattempts returns the reattempt audit report of q's period; a
	// *report.QueryError for a period that cannot be reported on.
	Reattempts(ctx context.Context, q report.Query) (report.Reattempts, error)
}

// reattemptReport answers GET /v1/reports/reattempts?from=&to=&format=json|csv: one row
// per card the caller's merchant had an attempt or a reattempt decision on in the period,
// with counts over every merchant at the processor account (as the networks count).
func reattemptReport(reports Reports) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, _ := principalOf(c)
		params, apiErr := queryParams(c)
		if apiErr != nil {
			return apiErr
		}
		names := make([]string, 0, len(params))
		for k := range params {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			switch k {
			case "from", "to", "format":
				if len(params[k]) > 1 {
					return invalid("parameter_invalid", k, k+" may be given only once")
				}
			default:
				return invalid("parameter_unknown", k, "unknown parameter "+strconvQuote(k))
			}
		}
		q := report.Query{Merchant: p.MerchantID}
		for _, b := range []struct {
			name string
			t    *time.Time
		}{{"from", &q.From}, {"to", &q.To}} {
			v := params.Get(b.name)
			if v == "" {
				continue
			}
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return invalid("parameter_invalid", b.name, b.name+" must be an RFC 3339 time, such as 2026-01-31T00:00:00Z")
			}
			*b.t = t
		}
		format := params.Get("format")
		switch format {
		case "", "json", "csv":
		default:
			return invalid("parameter_invalid", "format", "format must be json or csv")
		}

		rep, err := reports.Reattempts(c.Request().Context(), q)
		if err != nil {
			return err
		}
		// The whole report is rendered before the status is sent, so that a failure is
		// still answered with the error envelope.
		var buf bytes.Buffer
		contentType := echo.MIMEApplicationJSON
		if format == "csv" {
			contentType = "text/csv; charset=utf-8"
			c.Response().Header().Set("Content-Disposition", `attachment; filename="reattempts_`+
				rep.From.Format("20060102T150405Z")+"_"+rep.To.Format("20060102T150405Z")+`.csv"`)
			err = report.WriteCSV(&buf, rep)
		} else {
			err = report.WriteJSON(&buf, rep)
		}
		if err != nil {
			return err
		}
		return c.Blob(http.StatusOK, contentType, buf.Bytes())
	}
}
