package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestCurrentKey: GET /v1/key tells each role's key its merchant and role, never its
// secret, and answers an unknown key 401.
func TestCurrentKey(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	for _, role := range []string{"checkout", "operator", "auditor"} {
		k := g.key("m_whoami", role)
		r := g.do(http.MethodGet, "/v1/key", k, nil, "")
		if r.status != http.StatusOK {
			t.Fatalf("%s key: got %d %s, want 200", role, r.status, r.body)
		}
		got := r.json(t)
		if got["object"] != "api_key" || got["role"] != role || got["merchant"] != "m_whoami" || got["id"] == "" {
			t.Fatalf("%s key: got %s, want its id, merchant m_whoami and role", role, r.body)
		}
		if strings.Contains(string(r.body), k) {
			t.Fatalf("%s key: the answer holds the secret", role)
		}
	}
	unknown := "pgk_" + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	if r := g.do(http.MethodGet, "/v1/key", unknown, nil, ""); r.status != http.StatusUnauthorized {
		t.Fatalf("unknown key: got %d %s, want 401", r.status, r.body)
	}
	if r := g.do(http.MethodGet, "/v1/key", "", nil, ""); r.status != http.StatusUnauthorized {
		t.Fatalf("no key: got %d %s, want 401", r.status, r.body)
	}
}
