package api

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// OpenAPI is the OpenAPI 3.1 document of the API (openapi.yaml): every route, request,
// response body and status it serves. The whole-program tests validate every answer they
// receive against it.
//
//go:embed openapi.yaml
var OpenAPI []byte

// openAPIDocument answers GET /v1/openapi.yaml, without a key.
func openAPIDocument(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.Blob(http.StatusOK, "application/yaml", OpenAPI)
}
