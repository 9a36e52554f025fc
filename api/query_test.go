package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/paygate/paygate/apikey"
	"github.com/paygate/paygate/charge"
)

// TestMalformedQuery: a query string that url.ParseQuery refuses (an invalid percent-escape,
// a ';' separator) is answered 400 parameter_invalid on every endpoint that reads its query,
// naming the parameter when its name can be read, never with the defaults of a query that
// was not there.
func TestMalformedQuery(t *testing.T) {
	t.Parallel()
	s := setup(t, nil)
	for _, tc := range []struct {
		target    string
		role      apikey.Role
		wantParam string
	}{
		{"/v1/charges?limit=%zz", apikey.RoleCheckout, "limit"},
		{"/v1/charges?status=pending&limit=1%2", apikey.RoleCheckout, "limit"},
		{"/v1/charges?status=%zz", apikey.RoleAuditor, "status"},
		{"/v1/charges?starting_after=ch_%G1", apikey.RoleCheckout, "starting_after"},
		{"/v1/charges?%zz=1", apikey.RoleCheckout, ""},
		{"/v1/charges?%zz", apikey.RoleCheckout, ""},
		{"/v1/charges?lim%69t=%", apikey.RoleCheckout, "limit"},
		{"/v1/charges?limit=5;status=pending", apikey.RoleCheckout, "limit"},
		{"/v1/charges?limit;=5", apikey.RoleCheckout, ""},
		{"/v1/charges?limit=5&x=%zz&y=%zz", apikey.RoleCheckout, "x"},
		{"/v1/review?limit=%zz", apikey.RoleOperator, "limit"},
		{"/v1/review?limit=1;2", apikey.RoleAuditor, "limit"},
		{"/v1/reports/reattempts?from=%zz", apikey.RoleAuditor, "from"},
		{"/v1/reports/reattempts?format=csv&to=2026-01-01T00:00:00%2", apikey.RoleOperator, "to"},
		{"/v1/jobs/dead?limit=%zz", apikey.RoleOperator, "limit"},
		{"/v1/jobs/dead?cursor=%zz", apikey.RoleOperator, "cursor"},
	} {
		t.Run(tc.target, func(t *testing.T) {
			t.Parallel()
			rec := s.do(t, http.MethodGet, tc.target, tc.role, "")
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("got %d %s, want 400", rec.Code, rec.Body)
			}
			e := errorOf(t, rec)
			if e["type"] != typeInvalidRequest || e["code"] != charge.CodeParameterInvalid || e["param"] != tc.wantParam {
				t.Fatalf("got %s, want %s %s on %q", rec.Body, typeInvalidRequest, charge.CodeParameterInvalid, tc.wantParam)
			}
			if strings.Contains(rec.Body.String(), "%zz") {
				t.Fatalf("got %s, want no value echoed", rec.Body)
			}
		})
	}
	// Authentication and roles come first, as for any other parameter.
	if rec := s.do(t, http.MethodGet, "/v1/charges?limit=%zz", "", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("no key: got %d %s, want 401", rec.Code, rec.Body)
	}
	if rec := s.do(t, http.MethodGet, "/v1/jobs/dead?limit=%zz", apikey.RoleCheckout, ""); rec.Code != http.StatusForbidden {
		t.Errorf("wrong role: got %d %s, want 403", rec.Code, rec.Body)
	}
	// A well-formed query still works.
	if rec := s.do(t, http.MethodGet, "/v1/charges?limit=5&status=pending", apikey.RoleCheckout, ""); rec.Code != http.StatusOK {
		t.Errorf("valid query: got %d %s, want 200", rec.Code, rec.Body)
	}
}

// TestCardInMalformedQuery: a card number in a pair that url.ParseQuery drops (an invalid
// escape or a ';' beside it) is still refused as card data, before authentication, and never
// named as the parameter at fault.
func TestCardInMalformedQuery(t *testing.T) {
	t.Parallel()
	s := setup(t, nil)
	for _, tc := range []struct {
		query string
		role  apikey.Role
	}{
		{"4242424242424242=%zz", apikey.RoleCheckout},
		{"4242424242424242=%zz", ""},
		{"x=4242424242424242%zz", apikey.RoleCheckout},
		{"x=4242+4242+4242+4242%", apikey.RoleCheckout},
		{"x=4242%204242%204242%204242%zz", apikey.RoleCheckout},
		{"limit=5;4242424242424242", apikey.RoleCheckout},
		{"limit=5;x=4242-4242-4242-4242", apikey.RoleCheckout},
		{"%zz=4242%E2%80%8B4242%E2%80%8B4242%E2%80%8B4242", apikey.RoleCheckout},
		{"x=4242%E2%80%8B4242%E2%80%8B4242%E2%80%8B4242", apikey.RoleCheckout}, // zero width spaces
	} {
		t.Run(tc.query, func(t *testing.T) {
			t.Parallel()
			rec := s.do(t, http.MethodGet, "/v1/charges?"+tc.query, tc.role, "")
			if rec.Code != http.StatusBadRequest || errorOf(t, rec)["code"] != charge.CodeCardData {
				t.Fatalf("got %d %s, want 400 %s", rec.Code, rec.Body, charge.CodeCardData)
			}
			if strings.Contains(rec.Body.String(), "4242") {
				t.Fatalf("got %s, want the number not echoed", rec.Body)
			}
		})
	}
}

// TestUnescapeQueryLeniently: valid escapes and '+' decode as url.QueryUnescape decodes
// them; an invalid escape stays as it is.
func TestUnescapeQueryLeniently(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"abc", "abc"},
		{"a+b%20c", "a b c"},
		{"%41%4a%4A", "AJJ"},
		{"%zz%4", "%zz%4"},
		{"%", "%"},
		{"1%2", "1%2"},
		{"%e2%80%8b", "\u200b"},
		{"%%41", "%A"},
	} {
		if got := unescapeQueryLeniently(tc.in); got != tc.want {
			t.Errorf("unescapeQueryLeniently(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
