package sim

import (
	"maps"
	"time"
)

// LedgerEntry counts what happened under one processor idempotency key, so a
// test can prove that one logical operation made one effect. Requests sent
// without a key get an entry each, with an empty IdempotencyKey.
type LedgerEntry struct {
	// IdempotencyKey is the Idempotency-Key header of the requests.
	IdempotencyKey string `json:"idempotency_key"`
	// Requests counts every POST /v1/payment_intents carrying the key,
	// including those a fault answered, refused or held.
	Requests int `json:"requests"`
	// Executions counts the times the endpoint ran: at most once while the
	// key is kept. Requests refused by validation do not run it.
	Executions int `json:"executions"`
	// Replays counts stored responses answered again.
	Replays int `json:"replays"`
	// Effects counts PaymentIntents created under the key.
	Effects int `json:"effects"`
	// PaymentIntent is the first PaymentIntent created under the key.
	PaymentIntent string `json:"payment_intent,omitempty"`
	// PaymentIntents lists every PaymentIntent created under the key.
	PaymentIntents []string `json:"payment_intents"`
	// Amount, Currency, PaymentMethod, Customer and Metadata are those of
	// the first PaymentIntent.
	Amount        int64             `json:"amount,omitempty"`
	Currency      string            `json:"currency,omitempty"`
	PaymentMethod string            `json:"payment_method,omitempty"`
	Customer      string            `json:"customer,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	// Status is the current status of the last PaymentIntent.
	Status string `json:"status,omitempty"`
	// FirstSeen and LastSeen are Unix times of the first and last request.
	FirstSeen int64 `json:"first_seen"`
	LastSeen  int64 `json:"last_seen"`
}

// ledger keeps LedgerEntries in first-seen order, at most max of them.
type ledger struct {
	max     int
	byKey   map[string]*LedgerEntry
	entries []*LedgerEntry
	// lastIntent maps an entry to its last PaymentIntent, for Status.
	lastIntent map[*LedgerEntry]string
}

func newLedger(limit int) ledger {
	return ledger{max: limit, byKey: map[string]*LedgerEntry{}, lastIntent: map[*LedgerEntry]string{}}
}

// entry returns the entry for key, creating it; an empty key always makes a
// new entry.
func (l *ledger) entry(key string, now time.Time) *LedgerEntry {
	if key != "" {
		if e, ok := l.byKey[key]; ok {
			e.LastSeen = now.Unix()
			return e
		}
	}
	e := &LedgerEntry{IdempotencyKey: key, PaymentIntents: []string{}, FirstSeen: now.Unix(), LastSeen: now.Unix()}
	if key != "" {
		l.byKey[key] = e
	}
	l.entries = append(l.entries, e)
	for len(l.entries) > l.max {
		old := l.entries[0]
		if l.byKey[old.IdempotencyKey] == old {
			delete(l.byKey, old.IdempotencyKey)
		}
		delete(l.lastIntent, old)
		l.entries[0] = nil
		l.entries = l.entries[1:]
	}
	return e
}

// request counts a request under key (keyless requests are not counted: they
// have no entry until they execute).
func (l *ledger) request(key string, now time.Time) {
	if key != "" {
		l.entry(key, now).Requests++
	}
}

func (l *ledger) replay(key string, now time.Time) {
	l.entry(key, now).Replays++
}

// execution counts one run of the endpoint and returns the entry, to which
// effect then adds the PaymentIntent.
func (l *ledger) execution(key string, now time.Time) *LedgerEntry {
	e := l.entry(key, now)
	if key == "" {
		e.Requests++
	}
	e.Executions++
	return e
}

func (l *ledger) effect(e *LedgerEntry, pi *intent) {
	e.Effects++
	e.PaymentIntents = append(e.PaymentIntents, pi.id)
	e.Status = pi.status
	l.lastIntent[e] = pi.id
	if e.PaymentIntent != "" {
		return
	}
	e.PaymentIntent = pi.id
	e.Amount = pi.amount
	e.Currency = pi.currency
	if pi.method != nil {
		e.PaymentMethod = pi.method.id
	}
	e.Customer = pi.customer
	e.Metadata = maps.Clone(pi.metadata)
}

// snapshot copies the entries (only key's when key is set), taking Status
// from status while the PaymentIntent is still stored.
func (l *ledger) snapshot(key string, status func(id string) string) []LedgerEntry {
	out := []LedgerEntry{}
	for _, e := range l.entries {
		if key != "" && e.IdempotencyKey != key {
			continue
		}
		c := *e
		c.PaymentIntents = append([]string{}, e.PaymentIntents...)
		c.Metadata = maps.Clone(e.Metadata)
		if id, ok := l.lastIntent[e]; ok {
			if st := status(id); st != "" {
				c.Status = st
			}
		}
		out = append(out, c)
	}
	return out
}

func (l *ledger) reset() {
	*l = newLedger(l.max)
}
