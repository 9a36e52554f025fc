package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// keyJSON is the API key a request is authenticated with, as GET /v1/key shows it: never
// its secret.
type keyJSON struct {
	Object   string `json:"object"`
	ID       string `json:"id"`
	Merchant string `json:"merchant"`
	Role     string `json:"role"`
}

// currentKey answers GET /v1/key (any role): the key's id, merchant and role, so that a
// client checks a key once and shows what its role may do. An unknown or revoked key is
// answered 401 by the authentication before it.
func currentKey(c echo.Context) error {
	p, _ := principalOf(c)
	return c.JSON(http.StatusOK, keyJSON{Object: "api_key", ID: p.KeyID, Merchant: p.MerchantID, Role: string(p.Role)})
}
