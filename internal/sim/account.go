package sim

import "net/http"

// accountJSON is the Account object, reduced to what a platform reads about
// itself.
type accountJSON struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	BusinessProfile  map[string]any    `json:"business_profile"`
	BusinessType     string            `json:"business_type"`
	Capabilities     map[string]string `json:"capabilities"`
	ChargesEnabled   bool              `json:"charges_enabled"`
	Country          string            `json:"country"`
	Created          int64             `json:"created"`
	DefaultCurrency  string            `json:"default_currency"`
	DetailsSubmitted bool              `json:"details_submitted"`
	Email            *string           `json:"email"`
	Metadata         map[string]string `json:"metadata"`
	PayoutsEnabled   bool              `json:"payouts_enabled"`
	Settings         map[string]any    `json:"settings"`
	Type             string            `json:"type"`
}

// handleGetAccount serves GET /v1/account and GET /v1/accounts/{id} (the
// simulator's own id only).
func (s *Server) handleGetAccount(r *http.Request, id string) response {
	if _, e := parseParams(r.URL.Query(), retrieveParams); e != nil {
		return errorResponse(e)
	}
	if id != "" && id != s.account {
		return errorResponse(resourceMissing(http.StatusNotFound, "account", "account", id))
	}
	const name = "paygate processor simulator"
	return jsonResponse(http.StatusOK, accountJSON{
		ID:               s.account,
		Object:           "account",
		BusinessProfile:  map[string]any{"mcc": nil, "name": name, "url": nil},
		BusinessType:     "company",
		Capabilities:     map[string]string{"card_payments": "active", "transfers": "active"},
		ChargesEnabled:   true,
		Country:          "US",
		Created:          s.started.Unix(),
		DefaultCurrency:  "usd",
		DetailsSubmitted: true,
		Metadata:         map[string]string{},
		PayoutsEnabled:   true,
		Settings:         map[string]any{"dashboard": map[string]any{"display_name": name, "timezone": "Etc/UTC"}},
		Type:             "standard",
	})
}
