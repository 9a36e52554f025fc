package sim

import (
	"bytes"
	"container/heap"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
)

// The event types the simulator sends, as Stripe names them.
const (
	EventCreated        = "payment_intent.created"
	EventSucceeded      = "payment_intent.succeeded"
	EventPaymentFailed  = "payment_intent.payment_failed"
	EventProcessing     = "payment_intent.processing"
	EventRequiresAction = "payment_intent.requires_action"
	EventCanceled       = "payment_intent.canceled"
)

// Defaults of the zero fields of WebhookConfig.
const (
	DefaultWebhookWorkers    = 8
	DefaultWebhookMinBackoff = 250 * time.Millisecond
	DefaultWebhookMaxBackoff = 30 * time.Second
	DefaultWebhookTimeout    = 10 * time.Second
	// DefaultMaxWebhookEvents caps the events waiting for delivery; the oldest go.
	DefaultMaxWebhookEvents = 100_000
)

// webhookAPIVersion is the API version the events are rendered in (the simulator's own).
const webhookAPIVersion = "2023-10-16"

// WebhookConfig configures the delivery of a Server's events to one endpoint.
type WebhookConfig struct {
	// URL is the endpoint every event is POSTed to (http:// or https://).
	URL string
	// Secret signs every delivery (whsec_...): Stripe-Signature: t=<unix>,v1=<hex
	// HMAC-SHA256(secret, "<t>.<body>")>.
	Secret string
	// Client sends the deliveries. Nil: a client of its own with DefaultWebhookTimeout.
	Client *http.Client
	// Workers is how many deliveries are in flight at once (DefaultWebhookWorkers).
	Workers int
	// MinBackoff and MaxBackoff bound the wait before a failed delivery is sent again: the
	// n-th retry waits about MinBackoff·2ⁿ, at most MaxBackoff, with jitter.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// MaxEvents caps the events waiting for delivery (DefaultMaxWebhookEvents).
	MaxEvents int
	// Now is the clock of the signatures' timestamps (time.Now when nil): a delivery is
	// signed when it is sent.
	Now func() time.Time
}

// WebhookSettings are the switches of the deliveries (POST /_sim/webhooks).
type WebhookSettings struct {
	// Enabled sends the events; false keeps them waiting until it is set again.
	Enabled bool `json:"enabled"`
	// Duplicate sends every event emitted from now on twice.
	Duplicate bool `json:"duplicate"`
}

// WebhookStats counts the deliveries since StartWebhooks.
type WebhookStats struct {
	WebhookSettings
	// Configured reports that StartWebhooks was called: events are recorded.
	Configured bool `json:"configured"`
	// Emitted counts the events recorded; Delivered the deliveries answered 2xx; Attempts
	// the deliveries sent; Pending the deliveries waiting (a retry's included).
	Emitted   int `json:"emitted"`
	Delivered int `json:"delivered"`
	Attempts  int `json:"attempts"`
	Pending   int `json:"pending"`
	// Dropped counts the deliveries dropped because MaxEvents were waiting.
	Dropped int `json:"dropped"`
}

// webhookEvent is one event, rendered when it happens and encoded once, at its first send.
type webhookEvent struct {
	id      string
	typ     string
	created int64
	intent  paymentIntentJSON
	key     string // the idempotency key of the request that caused it

	once sync.Once
	body []byte
}

// eventJSON is an event as Stripe renders it.
type eventJSON struct {
	ID         string `json:"id"`
	Object     string `json:"object"`
	Account    string `json:"account"`
	APIVersion string `json:"api_version"`
	Created    int64  `json:"created"`
	Data       struct {
		Object paymentIntentJSON `json:"object"`
	} `json:"data"`
	Livemode        bool   `json:"livemode"`
	PendingWebhooks int    `json:"pending_webhooks"`
	Request         evtReq `json:"request"`
	Type            string `json:"type"`
}

type evtReq struct {
	ID             *string `json:"id"`
	IdempotencyKey *string `json:"idempotency_key"`
}

// delivery is one send of one event, due at due.
type delivery struct {
	ev      *webhookEvent
	due     time.Time
	attempt int // sends made so far
	seq     uint64
}

// deliveryHeap orders deliveries by due time, then by creation.
type deliveryHeap []*delivery

func (h deliveryHeap) Len() int { return len(h) }
func (h deliveryHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h deliveryHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *deliveryHeap) Push(x any)   { *h = append(*h, x.(*delivery)) }
func (h *deliveryHeap) Pop() any {
	old := *h
	n := len(old)
	d := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return d
}

// settleWatch is a processing PaymentIntent whose final state is announced when it settles.
type settleWatch struct {
	id string
	at time.Time
}

// webhooks is the outbox of a Server: the events waiting for delivery, sent by a few
// goroutines in the background, never on a request's path.
type webhooks struct {
	cfg     WebhookConfig
	account string
	log     *zap.Logger

	mu       sync.Mutex
	settings WebhookSettings
	queue    deliveryHeap
	seq      uint64
	watches  []settleWatch
	stats    WebhookStats
	wake     chan struct{} // signalled when the queue or the settings change
}

// StartWebhooks makes the Server record an event for every PaymentIntent it creates or
// changes — those whose answer a fault dropped included — and deliver each to cfg.URL, at
// least once, until ctx ends: a delivery not answered 2xx is sent again after a capped
// exponential backoff. Deliveries start enabled and not duplicated (SetWebhooks). It returns
// an error for a URL that is not http(s), an empty secret, or a second call.
func (s *Server) StartWebhooks(ctx context.Context, cfg WebhookConfig) error {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("sim: webhook URL %q: want http:// or https://", cfg.URL)
	}
	if cfg.Secret == "" {
		return errors.New("sim: webhook secret is required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWebhookWorkers
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultWebhookMinBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultWebhookMaxBackoff
	}
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.MinBackoff)
	if cfg.MaxEvents <= 0 {
		cfg.MaxEvents = DefaultMaxWebhookEvents
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: DefaultWebhookTimeout,
			Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Workers, IdleConnTimeout: 90 * time.Second}}
	}
	w := &webhooks{cfg: cfg, account: s.account, log: s.log.Named("webhooks"), wake: make(chan struct{}, 1),
		settings: WebhookSettings{Enabled: true}}
	w.stats.Configured = true
	s.mu.Lock()
	if s.hooks != nil {
		s.mu.Unlock()
		return errors.New("sim: webhooks already started")
	}
	s.hooks = w
	s.mu.Unlock()

	work := make(chan *delivery)
	for range cfg.Workers {
		go w.deliver(ctx, work)
	}
	go w.dispatch(ctx, s, work)
	return nil
}

// SetWebhooks changes the switches of the deliveries; it reports false, and changes nothing,
// when StartWebhooks was never called.
func (s *Server) SetWebhooks(set WebhookSettings) bool {
	w := s.webhooks()
	if w == nil {
		return false
	}
	w.mu.Lock()
	w.settings = set
	w.mu.Unlock()
	w.signal()
	return true
}

// WebhookStats returns the switches and counts of the deliveries.
func (s *Server) WebhookStats() WebhookStats {
	w := s.webhooks()
	if w == nil {
		return WebhookStats{}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.stats
	st.WebhookSettings = w.settings
	st.Pending = len(w.queue)
	return st
}

func (s *Server) webhooks() *webhooks {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hooks
}

// emitLocked records the events of a PaymentIntent just created: payment_intent.created,
// then the one its state calls for. s.mu must be held.
func (s *Server) emitLocked(pi *intent) {
	if s.hooks == nil {
		return
	}
	now := s.now()
	s.hooks.add(s.event(pi, EventCreated, now))
	if typ := stateEvent(pi.status); typ != "" {
		s.hooks.add(s.event(pi, typ, now))
	}
	if pi.status == statusProcessing && !pi.settleAt.IsZero() {
		s.hooks.watch(pi.id, pi.settleAt)
	}
}

// event renders an event of pi at now. s.mu must be held.
func (s *Server) event(pi *intent, typ string, now time.Time) *webhookEvent {
	return &webhookEvent{id: newID("evt_", 24), typ: typ, created: now.Unix(),
		intent: s.renderIntent(pi, expansion{}), key: pi.idempotencyKey}
}

// stateEvent is the event type that announces a PaymentIntent reaching status; empty for
// a state no event announces.
func stateEvent(status string) string {
	switch status {
	case statusSucceeded:
		return EventSucceeded
	case statusRequiresPaymentMethod:
		return EventPaymentFailed
	case statusProcessing:
		return EventProcessing
	case statusRequiresAction:
		return EventRequiresAction
	case "canceled":
		return EventCanceled
	}
	return ""
}

// encode returns the event's body, encoded once.
func (e *webhookEvent) encode(account string) []byte {
	e.once.Do(func() {
		out := eventJSON{ID: e.id, Object: "event", Account: account, APIVersion: webhookAPIVersion,
			Created: e.created, PendingWebhooks: 1, Type: e.typ}
		out.Data.Object = e.intent
		if e.key != "" {
			out.Request.IdempotencyKey = &e.key
		}
		e.body = marshal(out)
	})
	return e.body
}

// add queues the deliveries of ev: two when duplicates are on.
func (w *webhooks) add(ev *webhookEvent) {
	w.mu.Lock()
	w.stats.Emitted++
	copies := 1
	if w.settings.Duplicate {
		copies = 2
	}
	for range copies {
		w.seq++
		heap.Push(&w.queue, &delivery{ev: ev, seq: w.seq})
	}
	for len(w.queue) > w.cfg.MaxEvents {
		w.dropOldestLocked()
	}
	w.mu.Unlock()
	w.signal()
}

// dropOldestLocked drops the delivery created first. w.mu must be held.
func (w *webhooks) dropOldestLocked() {
	oldest := 0
	for i, d := range w.queue {
		if d.seq < w.queue[oldest].seq {
			oldest = i
		}
	}
	heap.Remove(&w.queue, oldest)
	w.stats.Dropped++
	if w.stats.Dropped == 1 || w.stats.Dropped%1000 == 0 {
		w.log.Warn("webhook outbox cap reached: oldest deliveries dropped",
			zap.Int("dropped", w.stats.Dropped), zap.Int("max_events", w.cfg.MaxEvents))
	}
}

// watch asks for the final event of a processing PaymentIntent once it settles, at at.
func (w *webhooks) watch(id string, at time.Time) {
	w.mu.Lock()
	w.watches = append(w.watches, settleWatch{id: id, at: at})
	w.mu.Unlock()
	w.signal()
}

func (w *webhooks) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// settleWatchTick is how often the processing PaymentIntents are looked at while any waits.
const settleWatchTick = 100 * time.Millisecond

// dispatch hands the due deliveries to the workers, while enabled, and announces the
// processing PaymentIntents that settled, until ctx ends.
func (w *webhooks) dispatch(ctx context.Context, s *Server, work chan<- *delivery) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if w.settleDue(s.now()) {
			s.announceSettled(w)
		}
		next, wait := w.next()
		if next != nil {
			select {
			case work <- next:
				continue
			case <-ctx.Done():
				return
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-timer.C:
		}
	}
}

// settleDue reports whether a watched PaymentIntent's processing time has come at now.
func (w *webhooks) settleDue(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wt := range w.watches {
		if !now.Before(wt.at) {
			return true
		}
	}
	return false
}

// next pops the delivery due now, if deliveries are enabled; else it returns how long to
// wait before looking again.
func (w *webhooks) next() (*delivery, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wait := time.Hour
	if len(w.watches) > 0 {
		wait = settleWatchTick
	}
	if !w.settings.Enabled || len(w.queue) == 0 {
		return nil, wait
	}
	if d := time.Until(w.queue[0].due); d > 0 {
		return nil, min(wait, d)
	}
	return heap.Pop(&w.queue).(*delivery), 0
}

// announceSettled emits the final events of the watched PaymentIntents whose processing
// time has come, settling them as a read would.
func (s *Server) announceSettled(w *webhooks) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.mu.Lock()
	now := s.now()
	var due []string
	kept := w.watches[:0]
	for _, wt := range w.watches {
		if now.Before(wt.at) {
			kept = append(kept, wt)
			continue
		}
		due = append(due, wt.id)
	}
	w.watches = kept
	w.mu.Unlock()
	for _, id := range due {
		pi := s.intents.get(id)
		if pi == nil {
			continue
		}
		pi.settle(now)
		if typ := stateEvent(pi.status); typ != "" && pi.status != statusProcessing {
			w.add(s.event(pi, typ, now))
		}
	}
}

// deliver sends the deliveries it is handed until ctx ends; a failed one goes back to the
// queue, due after its backoff.
func (w *webhooks) deliver(ctx context.Context, work <-chan *delivery) {
	for {
		var d *delivery
		select {
		case <-ctx.Done():
			return
		case d = <-work:
		}
		err := w.send(ctx, d.ev)
		w.mu.Lock()
		d.attempt++
		w.stats.Attempts++
		if err == nil {
			w.stats.Delivered++
			w.mu.Unlock()
			continue
		}
		ev, attempt := d.ev, d.attempt
		d.due = time.Now().Add(w.backoff(attempt))
		heap.Push(&w.queue, d) // another worker may take it from here
		w.mu.Unlock()
		w.signal()
		if ctx.Err() == nil {
			w.log.Debug("webhook delivery failed", zap.String("event_id", ev.id), zap.String("type", ev.typ),
				zap.Int("attempt", attempt), zap.Error(err))
		}
	}
}

// backoff is the wait before the retry that follows the n-th failed send: MinBackoff·2ⁿ⁻¹
// capped at MaxBackoff, the upper half of it drawn at random.
func (w *webhooks) backoff(n int) time.Duration {
	d := w.cfg.MaxBackoff
	if n < 30 {
		d = min(w.cfg.MinBackoff<<(n-1), w.cfg.MaxBackoff)
	}
	return d/2 + rand.N(d/2+1)
}

// send POSTs one delivery of ev, signed now; it returns nil for a 2xx answer.
func (w *webhooks) send(ctx context.Context, ev *webhookEvent) error {
	body := ev.encode(w.account)
	rctx, cancel := context.WithTimeout(ctx, DefaultWebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, w.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
	req.Header.Set("Stripe-Signature", SignWebhook(body, w.cfg.Secret, w.cfg.Now()))
	resp, err := w.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("answered %d", resp.StatusCode)
	}
	return nil
}

// SignWebhook returns the Stripe-Signature header of body signed with secret at t:
// t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>, as Stripe signs its events.
func SignWebhook(body []byte, secret string, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// webhookSwitches is the body of POST /_sim/webhooks: the switches to change.
type webhookSwitches struct {
	Enabled   *bool `json:"enabled"`
	Duplicate *bool `json:"duplicate"`
}

// serveWebhooks answers GET and POST /_sim/webhooks.
func (s *Server) serveWebhooks(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		var sw webhookSwitches
		dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sw); err != nil && err != io.EOF {
			controlError(w, http.StatusBadRequest, err)
			return
		}
		if hooks := s.webhooks(); hooks != nil {
			hooks.mu.Lock()
			set := hooks.settings
			hooks.mu.Unlock()
			if sw.Enabled != nil {
				set.Enabled = *sw.Enabled
			}
			if sw.Duplicate != nil {
				set.Duplicate = *sw.Duplicate
			}
			s.SetWebhooks(set)
		} else if sw.Enabled != nil || sw.Duplicate != nil {
			controlError(w, http.StatusConflict, errors.New("webhooks are not configured: start the simulator with --webhook-url and --webhook-secret"))
			return
		}
	}
	jsonResponse(http.StatusOK, s.WebhookStats()).write(w)
}
