package sim

import (
	"time"
)

// keyState is where a request under an idempotency key stands.
type keyState int

const (
	keyRunning keyState = iota + 1
	keyDone
)

// keyEntry is one idempotency key: the request it is bound to and, once
// executed, the stored response.
type keyEntry struct {
	key         string
	fingerprint string
	state       keyState
	created     time.Time
	requestID   string // the request whose response is stored
	resp        response
}

// keyStore holds idempotency keys for ttl after their first execution began,
// and at most max keys (the oldest finished keys go first).
type keyStore struct {
	ttl   time.Duration
	max   int
	byKey map[string]*keyEntry
	fifo  []*keyEntry // by created; may hold entries already removed
}

func newKeyStore(ttl time.Duration, limit int) keyStore {
	return keyStore{ttl: ttl, max: limit, byKey: map[string]*keyEntry{}}
}

// beginResult is what the idempotency layer decides for a request.
type beginResult int

const (
	// execute: the key is new (or expired); it is now held by this request.
	execute beginResult = iota + 1
	// replay: a response is stored for the same parameters.
	replay
	// mismatch: the key was used with other parameters.
	mismatch
	// inUse: a request with this key is still running.
	inUse
)

// begin looks key up at now. For execute the returned entry is held by the
// caller, who must finish or abandon it.
func (ks *keyStore) begin(key, fingerprint, requestID string, now time.Time) (*keyEntry, beginResult) {
	ks.expire(now)
	if e, ok := ks.byKey[key]; ok {
		switch {
		case e.state == keyRunning:
			return e, inUse
		case e.fingerprint != fingerprint:
			return e, mismatch
		default:
			return e, replay
		}
	}
	e := &keyEntry{key: key, fingerprint: fingerprint, state: keyRunning, created: now, requestID: requestID}
	ks.byKey[key] = e
	ks.fifo = append(ks.fifo, e)
	return e, execute
}

// finish stores resp under e. It returns how many keys the cap evicted.
func (ks *keyStore) finish(e *keyEntry, resp response) int {
	e.state = keyDone
	e.resp = resp
	return ks.evict()
}

// abandon releases e without storing anything: the request never executed.
func (ks *keyStore) abandon(e *keyEntry) {
	if ks.byKey[e.key] == e {
		delete(ks.byKey, e.key)
	}
}

// expire drops finished keys whose time is over.
func (ks *keyStore) expire(now time.Time) {
	for len(ks.fifo) > 0 {
		e := ks.fifo[0]
		if ks.byKey[e.key] != e {
			ks.pop()
			continue
		}
		if e.state == keyRunning || now.Before(e.created.Add(ks.ttl)) {
			return
		}
		delete(ks.byKey, e.key)
		ks.pop()
	}
}

// evict drops the oldest finished keys beyond the cap.
func (ks *keyStore) evict() int {
	n := 0
	for i := 0; len(ks.byKey) > ks.max && i < len(ks.fifo); {
		e := ks.fifo[i]
		switch {
		case ks.byKey[e.key] != e:
			if i == 0 {
				ks.pop()
				continue
			}
		case e.state == keyDone:
			delete(ks.byKey, e.key)
			e.resp = response{}
			n++
			if i == 0 {
				ks.pop()
				continue
			}
		}
		i++
	}
	return n
}

func (ks *keyStore) pop() {
	ks.fifo[0] = nil
	ks.fifo = ks.fifo[1:]
	if len(ks.fifo) == 0 {
		ks.fifo = nil
	}
}

func (ks *keyStore) count() int {
	return len(ks.byKey)
}

func (ks *keyStore) reset() {
	*ks = newKeyStore(ks.ttl, ks.max)
}
