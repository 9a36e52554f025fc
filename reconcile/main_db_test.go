package reconcile_test

import (
	"context"
	"testing"

	"github.com/paygate/paygate/apikey"
	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// serviceMerchant is a merchant of its own on a real pool (the code under test commits).
func serviceMerchant(t *testing.T) (*store.DB, string) {
	t.Helper()
	db := store.New(dbtest.Pool(t))
	m := "m_" + charge.NewID()[17:]
	k, _ := apikey.Generate()
	if err := db.CreateKey(context.Background(), m, apikey.RoleCheckout, k); err != nil {
		t.Fatal(err)
	}
	return db, m
}
