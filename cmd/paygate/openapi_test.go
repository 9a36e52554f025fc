package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/paygate/paygate/api"
)

// The whole-program tests validate every answer the gateway's API gives them against the
// OpenAPI document the binary serves (api/openapi.yaml): the transport of every HTTP client
// of the tests does, for each address a test gateway listens on. An answer the document does
// not describe (a status it does not list for the operation, a body that does not match its
// schema) fails the test that received it.

// spec is the parsed document and its router.
var spec = sync.OnceValues(func() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.OpenAPI)
	if err != nil {
		return nil, fmt.Errorf("openapi: parse: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi: invalid document: %w", err)
	}
	return doc, nil
})

var specRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := spec()
	if err != nil {
		return nil, err
	}
	// Routed on paths alone: the test gateways listen on ports of their own.
	routed := *doc
	routed.Servers = nil
	return gorillamux.NewRouter(&routed)
})

// apiHosts are the host:port of the test gateways' APIs, each with the test it belongs to.
var apiHosts sync.Map // string -> *testing.T

// checkAPI makes every answer from the API at base (http://host:port) validated against the
// document, failures reported on t, until t ends.
func checkAPI(t *testing.T, base string) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	apiHosts.Store(u.Host, t)
	t.Cleanup(func() { apiHosts.Delete(u.Host) })
}

func init() {
	http.DefaultTransport = specCheck{next: http.DefaultTransport}
}

// specCheck is an http.RoundTripper that validates the answers of the test gateways' APIs.
type specCheck struct{ next http.RoundTripper }

func (s specCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	v, ok := apiHosts.Load(req.URL.Host)
	if !ok {
		return resp, nil
	}
	t := v.(*testing.T)
	body, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if rerr != nil {
		// The connection failed mid-body (a test that kills the gateway): nothing to check.
		return resp, nil
	}
	if verr := validateAnswer(req, resp.StatusCode, resp.Header, body); verr != nil {
		t.Errorf("OpenAPI: %s %s answered %d, which api/openapi.yaml does not describe: %v\nbody: %s",
			req.Method, req.URL.RequestURI(), resp.StatusCode, verr, truncate(body, 2000))
	}
	return resp, nil
}

// validateAnswer checks one answer against the document. A path or method the document
// does not have must be answered 404 or 405 in the error envelope.
func validateAnswer(req *http.Request, status int, header http.Header, body []byte) error {
	doc, err := spec()
	if err != nil {
		return err
	}
	router, err := specRouter()
	if err != nil {
		return err
	}
	route, params, err := router.FindRoute(req)
	if errors.Is(err, routers.ErrPathNotFound) || errors.Is(err, routers.ErrMethodNotAllowed) {
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			return fmt.Errorf("no operation %s %s in the document, and the status is not 404 or 405", req.Method, req.URL.Path)
		}
		return validateEnvelope(doc, req.Method, body)
	}
	if err != nil {
		return fmt.Errorf("routing: %w", err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status: status,
		Header: header,
		Body:   io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			ExcludeResponseBody:   req.Method == http.MethodHead,
			MultiError:            true,
		},
	}
	return openapi3filter.ValidateResponse(context.Background(), in)
}

// validateEnvelope checks that body is the error envelope (none for HEAD).
func validateEnvelope(doc *openapi3.T, method string, body []byte) error {
	if method == http.MethodHead {
		return nil
	}
	ref := doc.Components.Schemas["ErrorEnvelope"]
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	return ref.Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
}

func truncate(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return append(b[:n:n], "..."...)
}

// TestOpenAPIDocument checks that the document parses and is valid OpenAPI 3.1, and that
// serve publishes it.
func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	doc, err := spec()
	if err != nil {
		t.Fatal(err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi: got %q, want 3.1", doc.OpenAPI)
	}
	g := startGateway(t)
	r := g.do(http.MethodGet, "/v1/openapi.yaml", "", nil, "")
	if r.status != http.StatusOK || !bytes.Equal(r.body, api.OpenAPI) {
		t.Fatalf("GET /v1/openapi.yaml: got %d and %d bytes, want 200 and the document", r.status, len(r.body))
	}
}
