// Command minimal is the minimal keyed-charge gateway that make bench measures paygate
// against: the same job with nothing more. An API key is looked up by its hash (paygate's
// api_keys table) and cached; a charge is one INSERT with a unique (merchant, idempotency
// key), one stripe-go PaymentIntent create+confirm under that key, one UPDATE of the outcome,
// and a JSON answer. It is a yardstick, not a product: it has no retries, no reconciliation
// and no network rules.
//
//	DATABASE_URL=... STRIPE_API_BASE=http://127.0.0.1:12111 MINIMAL_ADDR=127.0.0.1:8090 minimal
package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/paymentintent"
)

const schema = `CREATE TABLE IF NOT EXISTS minimal_charges (
	id              bigserial PRIMARY KEY,
	merchant_id     text NOT NULL,
	idempotency_key text NOT NULL,
	amount          bigint NOT NULL,
	currency        text NOT NULL,
	payment_method  text NOT NULL,
	status          text NOT NULL,
	processor_ref   text,
	created_at      timestamptz NOT NULL DEFAULT now(),
	updated_at      timestamptz NOT NULL DEFAULT now(),
	UNIQUE (merchant_id, idempotency_key))`

type gateway struct {
	db   *pgxpool.Pool
	pi   paymentintent.Client
	mu   sync.Mutex
	keys map[[32]byte]string // key hash → merchant
}

func main() {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatalf("DATABASE_URL: %v", err)
	}
	if n, err := strconv.Atoi(os.Getenv("MINIMAL_DB_MAX_CONNS")); err == nil && n > 0 {
		cfg.MaxConns = int32(n)
	}
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec(ctx, schema); err != nil {
		log.Fatal(err)
	}
	backend := stripe.GetBackendWithConfig(stripe.APIBackend, &stripe.BackendConfig{
		URL: stripe.String(os.Getenv("STRIPE_API_BASE")), MaxNetworkRetries: stripe.Int64(0),
		HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}, EnableTelemetry: stripe.Bool(false),
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelError},
	})
	g := &gateway{db: db, pi: paymentintent.Client{B: backend, Key: "sk_test_minimal"}, keys: map[[32]byte]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/charges", g.charge)
	mux.HandleFunc("GET /stats", stats)
	log.Fatal(http.ListenAndServe(os.Getenv("MINIMAL_ADDR"), mux))
}

// stats answers the process's allocation counters, for make bench.
func stats(w http.ResponseWriter, _ *http.Request) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	fmt.Fprintf(w, "alloc_bytes=%d mallocs=%d\n", m.TotalAlloc, m.Mallocs)
}

// merchant returns the merchant of the request's API key, from the cache or the database.
func (g *gateway) merchant(r *http.Request) (string, bool) {
	secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return "", false
	}
	h := sha256.Sum256([]byte(secret))
	g.mu.Lock()
	m, ok := g.keys[h]
	g.mu.Unlock()
	if ok {
		return m, true
	}
	err := g.db.QueryRow(r.Context(), `SELECT merchant_id FROM api_keys WHERE hash = $1 AND revoked_at IS NULL`, h[:]).Scan(&m)
	if err != nil {
		return "", false
	}
	g.mu.Lock()
	g.keys[h] = m
	g.mu.Unlock()
	return m, true
}

type request struct {
	Amount        int64  `json:"amount"`
	Currency      string `json:"currency"`
	PaymentMethod string `json:"payment_method"`
}

type answer struct {
	ID             int64  `json:"id"`
	Status         string `json:"status"`
	Amount         int64  `json:"amount"`
	Currency       string `json:"currency"`
	ProcessorRef   string `json:"processor_ref,omitempty"`
	IdempotencyKey string `json:"idempotency_key"`
}

func (g *gateway) charge(w http.ResponseWriter, r *http.Request) {
	merchant, ok := g.merchant(r)
	if !ok {
		http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || key == "" || req.Amount <= 0 {
		http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	a := answer{Status: "processing", Amount: req.Amount, Currency: req.Currency, IdempotencyKey: key}
	err := g.db.QueryRow(ctx, `INSERT INTO minimal_charges (merchant_id, idempotency_key, amount, currency, payment_method, status)
		VALUES ($1, $2, $3, $4, $5, 'processing') ON CONFLICT (merchant_id, idempotency_key) DO NOTHING RETURNING id`,
		merchant, key, req.Amount, req.Currency, req.PaymentMethod).Scan(&a.ID)
	if err != nil {
		// The key was seen before: answer what it holds.
		err = g.db.QueryRow(ctx, `SELECT id, status, COALESCE(processor_ref, '') FROM minimal_charges
			WHERE merchant_id = $1 AND idempotency_key = $2`, merchant, key).Scan(&a.ID, &a.Status, &a.ProcessorRef)
		if err != nil {
			http.Error(w, `{"error":"internal_error"}`, http.StatusInternalServerError)
			return
		}
		write(w, a)
		return
	}
	params := &stripe.PaymentIntentParams{
		Amount: stripe.Int64(req.Amount), Currency: stripe.String(req.Currency),
		PaymentMethod: stripe.String(req.PaymentMethod), Confirm: stripe.Bool(true),
		PaymentMethodTypes: stripe.StringSlice([]string{"card"}), ErrorOnRequiresAction: stripe.Bool(true),
	}
	params.SetIdempotencyKey("mc_" + strconv.FormatInt(a.ID, 10))
	params.AddMetadata("minimal_charge_id", strconv.FormatInt(a.ID, 10))
	params.Context = ctx
	pi, err := g.pi.New(params)
	switch {
	case err == nil && pi.Status == stripe.PaymentIntentStatusSucceeded:
		a.Status, a.ProcessorRef = "succeeded", pi.ID
	case err == nil:
		a.Status, a.ProcessorRef = "pending", pi.ID
	default:
		a.Status = "failed"
	}
	if _, err := g.db.Exec(ctx, `UPDATE minimal_charges SET status = $2, processor_ref = NULLIF($3, ''), updated_at = now()
		WHERE id = $1`, a.ID, a.Status, a.ProcessorRef); err != nil {
		http.Error(w, `{"error":"internal_error"}`, http.StatusInternalServerError)
		return
	}
	write(w, a)
}

func write(w http.ResponseWriter, a answer) {
	w.Header().Set("Content-Type", "application/json")
	if a.Status != "succeeded" {
		w.WriteHeader(http.StatusAccepted)
	}
	_ = json.NewEncoder(w).Encode(a)
}
