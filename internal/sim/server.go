package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Defaults for the zero fields of Config.
const (
	// DefaultSearchLag is how long a new PaymentIntent stays invisible to
	// search. Stripe documents data as searchable "in less than a minute"
	// and usually far sooner.
	DefaultSearchLag = 5 * time.Second
	// DefaultProcessingTime is how long a PaymentIntent paid with a
	// pm_sim_processing method stays in processing.
	DefaultProcessingTime = 30 * time.Second
	// DefaultKeyTTL is how long a stored idempotent response is replayed.
	DefaultKeyTTL = 24 * time.Hour
	// DefaultMaxPaymentIntents caps the PaymentIntents kept; the oldest go.
	DefaultMaxPaymentIntents = 100_000
	// DefaultMaxIdempotencyKeys caps the idempotency keys kept; the oldest
	// finished ones go first, even before their TTL.
	DefaultMaxIdempotencyKeys = 100_000
	// DefaultMaxLedgerEntries caps the ledger; the oldest entries go.
	DefaultMaxLedgerEntries = 100_000
)

// Config configures a Server. The zero Config is ready to use.
type Config struct {
	// AccountID is the processor account id, as GET /v1/account answers
	// it ("acct_..."). Empty: "acct_sim" and random characters, new for
	// each Server, so a restarted in-memory simulator never passes for the
	// one that held the earlier PaymentIntents.
	AccountID string
	// SecretKey, when set, is the only API key accepted. Empty: any
	// well-formed test mode secret or restricted key (sk_test_...,
	// rk_test_...). Live mode keys are always refused.
	SecretKey string
	// Now is the clock for created times, search lag, processing and key
	// expiry. Nil: time.Now. Waits for faults (delay_ms, processing_ms,
	// latency_ms) always use real time.
	Now func() time.Time
	// Logger receives one debug line per request and warnings when a cap
	// evicts data. It never receives API keys or request bodies. Nil: no
	// logging.
	Logger *zap.Logger
	// SearchLag is how long a new PaymentIntent is invisible to search.
	// Zero: DefaultSearchLag; negative: searchable at once.
	SearchLag time.Duration
	// ProcessingTime is how long pm_sim_processing PaymentIntents stay in
	// processing. Zero: DefaultProcessingTime; negative: forever.
	ProcessingTime time.Duration
	// KeyTTL is how long idempotency keys are kept. Zero: DefaultKeyTTL.
	KeyTTL time.Duration
	// MaxPaymentIntents, MaxIdempotencyKeys and MaxLedgerEntries bound
	// memory. Zero: the defaults.
	MaxPaymentIntents  int
	MaxIdempotencyKeys int
	MaxLedgerEntries   int
	// Seed seeds the random faults; Faults.Seed reseeds them.
	Seed uint64
}

// Server is an in-memory, Stripe-compatible payments processor with fault
// injection. It is an http.Handler and safe for concurrent use.
type Server struct {
	account        string
	secretKey      string
	now            func() time.Time
	log            *zap.Logger
	searchLag      time.Duration
	processingTime time.Duration
	started        time.Time

	mu            sync.Mutex
	intents       intentStore
	keys          keyStore
	intentDrops   drops // PaymentIntents the cap dropped
	keyDrops      drops // idempotency keys the cap dropped
	ledger        ledger
	script        []Step
	faults        Faults
	rng           *rand.Rand
	src           *rand.PCG
	confirmations map[string]int // per payment method id, for firstN
	release       chan struct{}  // closed by Reset to free held requests
	hooks         *webhooks      // the events' outbox; nil until StartWebhooks

	held      atomic.Int64
	closeOnce sync.Once
	closed    chan struct{}

	flightMu sync.Mutex
	flightCV *sync.Cond
	inFlight int // ServeHTTP calls running, hijacked connections included
}

// New returns a Server configured by cfg.
func New(cfg Config) *Server {
	s := &Server{
		account:        cfg.AccountID,
		secretKey:      cfg.SecretKey,
		now:            cfg.Now,
		log:            cfg.Logger,
		searchLag:      cfg.SearchLag,
		processingTime: cfg.ProcessingTime,
		closed:         make(chan struct{}),
		release:        make(chan struct{}),
		confirmations:  map[string]int{},
	}
	s.flightCV = sync.NewCond(&s.flightMu)
	s.src = rand.NewPCG(cfg.Seed, 0x5eed)
	s.rng = rand.New(s.src)
	if s.account == "" {
		s.account = newID("acct_sim", 12)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	switch {
	case s.searchLag == 0:
		s.searchLag = DefaultSearchLag
	case s.searchLag < 0:
		s.searchLag = 0
	}
	if s.processingTime == 0 {
		s.processingTime = DefaultProcessingTime
	}
	ttl := cfg.KeyTTL
	if ttl <= 0 {
		ttl = DefaultKeyTTL
	}
	s.started = s.now()
	s.intents = newIntentStore(orDefault(cfg.MaxPaymentIntents, DefaultMaxPaymentIntents))
	s.keys = newKeyStore(ttl, orDefault(cfg.MaxIdempotencyKeys, DefaultMaxIdempotencyKeys))
	s.ledger = newLedger(orDefault(cfg.MaxLedgerEntries, DefaultMaxLedgerEntries))
	return s
}

func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// AccountID returns the processor account id the Server answers for.
func (s *Server) AccountID() string {
	return s.account
}

// Close frees every held request (blackhole, delays, processing) by closing
// its connection unanswered, makes later holds end at once, and returns when
// no request is in flight any more. Call it before http.Server.Shutdown,
// which otherwise waits for held requests, and before closing an
// httptest.Server, which does not wait for hijacked connections. The Server
// keeps answering other requests.
func (s *Server) Close() {
	s.endHolds()
	s.flightMu.Lock()
	defer s.flightMu.Unlock()
	for s.inFlight > 0 {
		s.flightCV.Wait()
	}
}

// endHolds ends the holds as Close does, without waiting.
func (s *Server) endHolds() {
	s.closeOnce.Do(func() { close(s.closed) })
}

// enter and leave count the requests in flight for Close.
func (s *Server) enter() {
	s.flightMu.Lock()
	s.inFlight++
	s.flightMu.Unlock()
}

func (s *Server) leave() {
	s.flightMu.Lock()
	s.inFlight--
	if s.inFlight == 0 {
		s.flightCV.Broadcast()
	}
	s.flightMu.Unlock()
}

// Serve answers HTTP on ln until ctx ends, then frees held requests and shuts
// the HTTP server down, giving requests in flight up to five seconds before
// their connections are closed. It returns nil after a shutdown caused by ctx,
// else the error that stopped serving.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          zap.NewStdLog(s.log.Named("http")),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	s.endHolds()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	if err != nil {
		_ = hs.Close() // unblock handlers stuck writing to clients that do not read
	}
	s.Close()
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// Stats counts what the Server holds in memory.
type Stats struct {
	// PaymentIntents is the number of PaymentIntents kept.
	PaymentIntents int `json:"payment_intents"`
	// IdempotencyKeys is the number of keys kept, running ones included.
	IdempotencyKeys int `json:"idempotency_keys"`
	// LedgerEntries is the number of ledger entries kept.
	LedgerEntries int `json:"ledger_entries"`
	// ScriptSteps is the number of scripted steps not yet applied.
	ScriptSteps int `json:"script_steps"`
	// HeldRequests is the number of requests a blackhole step holds now.
	HeldRequests int `json:"held_requests"`
}

// Stats returns the current counts, after dropping expired keys.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys.expire(s.now())
	return Stats{
		PaymentIntents:  len(s.intents.byID),
		IdempotencyKeys: s.keys.count(),
		LedgerEntries:   len(s.ledger.entries),
		ScriptSteps:     len(s.script),
		HeldRequests:    int(s.held.Load()),
	}
}

// call is what the pipeline knows about one API request.
type call struct {
	requestID string
	key       string
	step      Step
}

// ServeHTTP answers the Stripe API under /v1/ and the fault controls under
// /_sim/.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.enter()
	defer s.leave()
	if strings.HasPrefix(r.URL.Path, "/_sim/") {
		s.serveControl(w, r)
		return
	}
	start := time.Now()
	c := &call{requestID: newID("req_", 14)}
	h := w.Header()
	h.Set("Request-Id", c.requestID)
	h.Set("Stripe-Version", stripeVersion(r))
	h.Set("Cache-Control", "no-cache, no-store")
	if r.Method == http.MethodPost {
		c.key = strings.TrimSpace(r.Header.Get("Idempotency-Key"))
		if c.key != "" {
			h.Set("Idempotency-Key", c.key)
		}
	}
	status, note := s.serveAPI(w, r, c)
	s.log.Debug("request",
		zap.String("method", r.Method),
		zap.String("path", r.URL.Path),
		zap.Int("status", status),
		zap.String("request_id", c.requestID),
		zap.String("idempotency_key", c.key),
		zap.String("outcome", note),
		zap.Int64("duration_ms", time.Since(start).Milliseconds()),
	)
}

// stripeVersion echoes the request's API version, as Stripe does.
func stripeVersion(r *http.Request) string {
	if v := r.Header.Get("Stripe-Version"); v != "" && len(v) < 64 {
		return v
	}
	return "2023-10-16"
}

// serveAPI runs the pipeline: faults, authentication, routing. It returns
// the status answered (0 when none was) and a word for the log.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, c *call) (int, string) {
	write := r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/")
	s.mu.Lock()
	if write && r.URL.Path == "/v1/payment_intents" {
		s.ledger.request(c.key, s.now())
	}
	var step Step
	switch {
	case write && len(s.script) > 0:
		step = s.script[0]
		s.script = s.script[1:]
	default:
		step, _ = s.faults.draw(s.rng, write)
	}
	release := s.release
	s.mu.Unlock()
	c.step = step

	if step.Date != "" {
		w.Header().Set("Date", step.Date)
	}
	if step.DelayMS > 0 && !s.pause(millis(step.DelayMS), release) {
		closeConnection(w)
		return 0, "aborted"
	}
	switch {
	case step.Refuse:
		resetConnection(w, r)
		return 0, "refused"
	case step.Blackhole:
		s.hold(w, r, release)
		return 0, "blackholed"
	case step.answers():
		errorResponse(step.apiError(step.Status)).write(w)
		return step.Status, "fault"
	}

	if e := s.authenticate(r); e != nil {
		return s.answer(w, c, errorResponse(e), "unauthenticated")
	}
	var resp response
	note := "ok"
	if write && r.URL.Path == "/v1/payment_intents" {
		var handled bool
		resp, note, handled = s.handleCreate(w, r, c, release)
		if handled {
			return 0, note
		}
	} else {
		resp = s.route(r)
	}
	return s.answer(w, c, resp, note)
}

// answer sends resp, or loses it when the request's step drops responses.
func (s *Server) answer(w http.ResponseWriter, c *call, resp response, note string) (int, string) {
	if c.step.DropResponse {
		dropConnection(w, resp)
		return 0, "dropped"
	}
	resp.write(w)
	return resp.status, note
}

// route answers the read endpoints.
func (s *Server) route(r *http.Request) response {
	path := r.URL.Path
	if r.Method == http.MethodGet {
		switch {
		case path == "/v1/payment_intents":
			return s.handleListIntents(r)
		case path == "/v1/payment_intents/search":
			return s.handleSearchIntents(r)
		case path == "/v1/account":
			return s.handleGetAccount(r, "")
		}
		if id, ok := pathID(path, "/v1/payment_intents/"); ok {
			return s.handleGetIntent(r, id)
		}
		if id, ok := pathID(path, "/v1/payment_methods/"); ok {
			return s.handleGetPaymentMethod(r, id)
		}
		if id, ok := pathID(path, "/v1/accounts/"); ok {
			return s.handleGetAccount(r, id)
		}
	}
	return errorResponse(notFoundRoute(r.Method, path))
}

// pathID returns the single path segment after prefix.
func pathID(path, prefix string) (string, bool) {
	id, ok := strings.CutPrefix(path, prefix)
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}

// pause waits d. It returns false when the Server closed or the script was
// reset meanwhile.
func (s *Server) pause(d time.Duration, release <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.closed:
		return false
	case <-release:
		return false
	}
}
