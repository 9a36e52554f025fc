package api

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/paygate/paygate/apikey"
	"github.com/paygate/paygate/store"
)

// TestDatabaseUnavailable: a request that meets a database it cannot reach — on the charge's
// first transaction, or while its key is checked — is 503 database_unavailable with
// Retry-After, never 500; other errors stay what they were.
func TestDatabaseUnavailable(t *testing.T) {
	t.Parallel()
	restarting := fmt.Errorf("charge: begin: store: acquire connection: %w",
		&pgconn.PgError{Severity: "FATAL", Code: "57P03", Message: "the database system is starting up"})
	for _, tc := range []struct {
		name       string
		err        error
		wantStatus int
		wantCode   string
	}{
		{"starting up", restarting, 503, "database_unavailable"},
		{"shutting down", fmt.Errorf("x: %w", &pgconn.PgError{Code: "57P01"}), 503, "database_unavailable"},
		{"connection failure", fmt.Errorf("x: %w", &pgconn.PgError{Code: "08006"}), 503, "database_unavailable"},
		{"connection closed", fmt.Errorf("x: %w", pgconn.ErrConnClosed), 503, "database_unavailable"},
		{"another database error", fmt.Errorf("x: %w", &pgconn.PgError{Code: "42P01"}), 500, "internal_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := setup(t, nil)
			s.charges.err = tc.err
			rec := s.do(t, http.MethodPost, "/v1/charges", apikey.RoleCheckout, validCharge, "Idempotency-Key", "k1")
			if rec.Code != tc.wantStatus || errorOf(t, rec)["code"] != tc.wantCode {
				t.Fatalf("got %d %s, want %d %s", rec.Code, rec.Body, tc.wantStatus, tc.wantCode)
			}
			if ra := rec.Header().Get("Retry-After"); tc.wantStatus == 503 && ra == "" {
				t.Fatal("got no Retry-After, want one")
			}
		})
	}

	// A key that is not cached meets the database too.
	s := setup(t, nil)
	s.e = New(Config{Auth: failingAuth{restarting}, Charges: s.charges, Limits: lim, Registry: prometheus.NewRegistry(),
		Unavailable: store.Unavailable})
	rec := s.do(t, http.MethodGet, "/v1/charges", apikey.RoleCheckout, "")
	if rec.Code != 503 || errorOf(t, rec)["code"] != "database_unavailable" || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("authentication while the database restarts: got %d %v %s, want 503 database_unavailable with Retry-After",
			rec.Code, rec.Header(), rec.Body)
	}
}

type failingAuth struct{ err error }

func (f failingAuth) Authenticate(context.Context, apikey.Hash) (apikey.Principal, error) {
	return apikey.Principal{}, f.err
}
