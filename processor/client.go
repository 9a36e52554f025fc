package processor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/form"
	"github.com/stripe/stripe-go/v76/paymentintent"
	"github.com/stripe/stripe-go/v76/paymentmethod"
	"go.uber.org/zap"
)

// Config configures the processor client.
type Config struct {
	// SecretKey is the processor's secret API key. It is never logged.
	SecretKey string
	// BaseURL is the processor's API base (Stripe's when empty; stripe-mock or a paygate
	// simulator in tests).
	BaseURL string
	// ConnectTimeout bounds connection set-up (default 1 s). Each call's own bound comes
	// from its context's deadline.
	ConnectTimeout time.Duration
	// MaxConnsPerHost bounds the connections to the processor (default 256).
	MaxConnsPerHost int
	// Log receives stripe-go's own messages, redacted.
	Log *zap.Logger
}

// Client is the processor adapter: one shared HTTP client, stripe-go's retries off.
type Client struct {
	key     string
	backend stripe.Backend
	pi      paymentintent.Client
	pm      paymentmethod.Client
	log     *zap.Logger
	cards   *cardCache
	conn    *connHook
}

// MetadataChargeID and MetadataRootChargeID are the PaymentIntent metadata keys that carry
// paygate's charge id and, for a reattempt, the id of the first charge of its chain.
const (
	MetadataChargeID     = "paygate_charge_id"
	MetadataRootChargeID = "paygate_root_charge_id"
)

// New returns a processor client.
func New(cfg Config) (*Client, error) {
	if cfg.SecretKey == "" {
		return nil, errors.New("processor: a secret key is required")
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = time.Second
	}
	if cfg.MaxConnsPerHost <= 0 {
		cfg.MaxConnsPerHost = 256
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	transport := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   cfg.ConnectTimeout + time.Second,
		MaxIdleConns:          cfg.MaxConnsPerHost,
		MaxIdleConnsPerHost:   cfg.MaxConnsPerHost,
		MaxConnsPerHost:       cfg.MaxConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}
	hook := &connHook{}
	httpClient := &http.Client{Transport: recordingTransport{base: transport, hook: hook}}
	bc := &stripe.BackendConfig{
		HTTPClient:        httpClient,
		MaxNetworkRetries: stripe.Int64(0), // the retry loop is the one retry layer
		LeveledLogger:     zapLeveled{log: cfg.Log.Named("stripe")},
		EnableTelemetry:   stripe.Bool(false),
	}
	if cfg.BaseURL != "" {
		bc.URL = stripe.String(cfg.BaseURL)
	}
	backend := stripe.GetBackendWithConfig(stripe.APIBackend, bc)
	return &Client{
		key:     cfg.SecretKey,
		backend: backend,
		pi:      paymentintent.Client{B: backend, Key: cfg.SecretKey},
		pm:      paymentmethod.Client{B: backend, Key: cfg.SecretKey},
		log:     cfg.Log,
		cards:   newCardCache(10000),
		conn:    hook,
	}, nil
}

// OnConnectionFailure sets f to be called after every request to the processor that failed
// without an answer or whose connection broke under it (refused, reset, closed, unreachable;
// not one that timed out or was cancelled): serve marks its AccountWatch stale with it, since
// a processor that went away may come back as another account. f must be quick; nil removes it.
func (c *Client) OnConnectionFailure(f func()) {
	if f == nil {
		c.conn.f.Store(nil)
		return
	}
	c.conn.f.Store(&f)
}

// Account returns the id of the processor account the secret key belongs to.
func (c *Client) Account(ctx context.Context) (string, error) {
	var acct stripe.Account
	params := &stripe.Params{Context: ctx}
	if err := c.backend.Call(http.MethodGet, "/v1/account", c.key, params, &acct); err != nil {
		return "", fmt.Errorf("processor: account: %w", err)
	}
	if acct.ID == "" {
		return "", errors.New("processor: account: no id in the answer")
	}
	return acct.ID, nil
}

// PaymentParams is one charge as the processor is asked to make it. The same params give
// the same request body byte for byte, so a retry under the same key is a replay.
type PaymentParams struct {
	// Key is the processor idempotency key ("pg_" + charge id).
	Key           string
	ChargeID      string
	RootChargeID  string // the first charge of a reattempt chain; empty otherwise
	Amount        int64
	Currency      string
	PaymentMethod string
	Customer      string
	// OffSession marks a merchant-initiated charge of a saved card.
	OffSession bool
}

// CreatePayment makes one attempt to create and confirm a PaymentIntent under p.Key, and
// classifies what happened. It never retries. A customer-initiated payment whose card asks
// for authentication (3-D Secure) comes back in requires_action, an unknown outcome
// (retry.ClassUnknownFinal); an off-session one is declined with authentication_required.
func (c *Client) CreatePayment(ctx context.Context, p PaymentParams) Attempt {
	if strings.TrimSpace(p.Key) == "" {
		// A write without our key would get one invented by stripe-go, and a blank key is
		// trimmed by stripe-go and sent empty, which the processor ignores: never send it.
		return Attempt{Outcome: terminal(0, "missing_idempotency_key"), Err: errors.New("processor: no idempotency key")}
	}
	ctx, ex := withExchange(ctx)
	params := &stripe.Params{Context: ctx, IdempotencyKey: stripe.String(p.Key)}
	pi := &intentAnswer{}
	err := c.backend.CallRaw(http.MethodPost, "/v1/payment_intents", c.key, paymentForm(p), params, pi)
	if err != nil {
		pi = nil
	}
	wrote, writes, status, header := ex.snapshot()
	a := classifyWrite(response{ctxErr: ctx.Err(), wrote: wrote, writes: writes, status: status, header: header}, pi, err)
	a.Writes = writes
	a.FreshConn = ex.freshConn()
	return a
}

// paymentForm is the form of the request that creates and confirms the PaymentIntent of p.
// It is, field for field and in the same order, what stripe-go's form encoder makes of the
// equivalent stripe.PaymentIntentParams (its fields in declaration order, metadata keys
// sorted), so that the body is the same byte for byte, built without the encoder's reflection
// over every field of the params.
func paymentForm(p PaymentParams) *form.Values {
	f := &form.Values{}
	f.Add("amount", strconv.FormatInt(p.Amount, 10))
	f.Add("confirm", "true")
	f.Add("currency", p.Currency)
	if p.Customer != "" {
		f.Add("customer", p.Customer)
	}
	f.Add("metadata["+MetadataChargeID+"]", p.ChargeID)
	if p.RootChargeID != "" {
		f.Add("metadata["+MetadataRootChargeID+"]", p.RootChargeID)
	}
	f.Add("payment_method", p.PaymentMethod)
	f.Add("payment_method_types[0]", "card")
	if p.OffSession {
		// No cardholder to authenticate: a card that asks for it fails with a 402
		// authentication_required, never waits in requires_action. A customer-initiated
		// charge may wait there (3-D Secure): an unknown outcome, for reconciliation.
		f.Add("error_on_requires_action", "true")
		f.Add("off_session", "true")
	}
	return f
}

// Card is what paygate needs of a card payment method: the network rules count attempts
// per card fingerprint.
type Card struct {
	Fingerprint string
	Brand       string // visa, mastercard, amex, ...
	Network     string
	ExpMonth    int64
	ExpYear     int64
}

var (
	// ErrNotCard is returned by Card for a payment method that is not a card.
	ErrNotCard = errors.New("processor: payment method is not a card")
	// ErrNoSuchPaymentMethod is returned by Card for a payment method the processor does
	// not know.
	ErrNoSuchPaymentMethod = errors.New("processor: no such payment method")
)

// Card returns the card behind a payment method (cached: a payment method's card never
// changes).
func (c *Client) Card(ctx context.Context, paymentMethod string) (Card, error) {
	if card, ok := c.cards.get(paymentMethod); ok {
		return card, nil
	}
	params := &stripe.PaymentMethodParams{}
	params.Context = ctx
	pm, err := c.pm.Get(paymentMethod, params)
	var se *stripe.Error
	if errors.As(err, &se) && se.HTTPStatusCode == http.StatusNotFound {
		return Card{}, fmt.Errorf("%w: %s", ErrNoSuchPaymentMethod, paymentMethod)
	}
	if err != nil {
		return Card{}, fmt.Errorf("processor: payment method: %w", err)
	}
	if pm.Card == nil {
		return Card{}, ErrNotCard
	}
	card := Card{
		Fingerprint: pm.Card.Fingerprint,
		Brand:       string(pm.Card.Brand),
		ExpMonth:    pm.Card.ExpMonth,
		ExpYear:     pm.Card.ExpYear,
	}
	if pm.Card.Networks != nil {
		card.Network = string(pm.Card.Networks.Preferred)
	}
	if card.Network == "" {
		card.Network = card.Brand
	}
	c.cards.put(paymentMethod, card)
	return card, nil
}

// CachedCard returns the card behind a payment method when Card has read it.
func (c *Client) CachedCard(paymentMethod string) (Card, bool) { return c.cards.get(paymentMethod) }

// ForgetCards empties the card cache: card fingerprints are the processor account's, and
// the account changed.
func (c *Client) ForgetCards() { c.cards.clear() }

// cardCache is a bounded map: at its bound an arbitrary entry makes room.
type cardCache struct {
	mu  sync.Mutex
	max int
	m   map[string]Card
}

func newCardCache(max int) *cardCache { return &cardCache{max: max, m: make(map[string]Card)} }

func (c *cardCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
}

func (c *cardCache) get(k string) (Card, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *cardCache) put(k string, v Card) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		for old := range c.m {
			delete(c.m, old)
			break
		}
	}
	c.m[k] = v
}
