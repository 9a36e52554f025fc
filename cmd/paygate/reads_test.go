package main

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap/zaptest"

	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/report"
	"github.com/paygate/paygate/store"
)

// TestStandbyReads: the review queue and the reattempt report are read from the read
// database, and from the primary while the read database cannot be reached; without a read
// database, from the primary.
func TestStandbyReads(t *testing.T) {
	t.Parallel()
	up := dbtest.URL(t)
	const down = "postgres://paygate@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=1"
	open := func(url string) *store.DB {
		t.Helper()
		pool, err := pgxpool.New(context.Background(), url) // connects lazily
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return store.New(pool)
	}
	for _, tc := range []struct {
		name             string
		primary, standby string // "" standby: none
		wantErr          bool
	}{
		{"from the standby", down, up, false},
		{"from the primary while the standby is down", up, down, false},
		{"from the primary without a standby", up, "", false},
		{"both down", down, down, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &standbyReads{DB: open(tc.primary), log: zaptest.NewLogger(t)}
			if tc.standby != "" {
				r.standby = open(tc.standby)
			}
			_, errQueue := r.ReviewQueue(context.Background(), "m_reads", 10)
			_, errReport := r.ReattemptCards(context.Background(), report.Query{Merchant: "m_reads"})
			for what, err := range map[string]error{"review queue": errQueue, "reattempt report": errReport} {
				if tc.wantErr && !store.Unavailable(err) {
					t.Errorf("%s: got %v, want the database unavailable", what, err)
				}
				if !tc.wantErr && err != nil {
					t.Errorf("%s: got %v, want nil", what, err)
				}
			}
		})
	}
}
