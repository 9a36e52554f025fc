package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// SetScript replaces the script: the steps apply, in order, to the next
// write requests. It returns the first invalid step's error and then leaves
// the script unchanged.
func (s *Server) SetScript(steps []Step) error {
	for i, st := range steps {
		if err := st.Validate(); err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append([]Step(nil), steps...)
	return nil
}

// Script returns the steps not yet applied.
func (s *Server) Script() []Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Step{}, s.script...)
}

// SetFaults replaces the random faults; the zero Faults turns them off.
func (s *Server) SetFaults(f Faults) error {
	if err := f.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Seed != nil {
		s.src.Seed(*f.Seed, 0x5eed)
		seed := *f.Seed
		f.Seed = &seed
	}
	s.faults = f
	return nil
}

// Faults returns the random faults in force.
func (s *Server) Faults() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults
}

// Ledger returns the effects per idempotency key, oldest first.
func (s *Server) Ledger() []LedgerEntry {
	return s.ledgerFor("")
}

func (s *Server) ledgerFor(key string) []LedgerEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	return s.ledger.snapshot(key, func(id string) string {
		pi := s.intents.get(id)
		if pi == nil {
			return ""
		}
		pi.settle(now)
		return pi.status
	})
}

// Reset forgets every PaymentIntent, idempotency key and ledger entry,
// clears the script and the random faults, and closes the connections of
// held requests (blackhole, delays, processing) unanswered.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.intents.reset()
	s.keys.reset()
	s.ledger.reset()
	s.intentDrops, s.keyDrops = drops{}, drops{}
	s.script = nil
	s.faults = Faults{}
	s.confirmations = map[string]int{}
	close(s.release)
	s.release = make(chan struct{})
}

// ledgerJSON is the body of GET /_sim/ledger.
type ledgerJSON struct {
	Object           string        `json:"object"`
	Account          string        `json:"account"`
	Data             []LedgerEntry `json:"data"`
	TotalEffects     int           `json:"total_effects"`
	MaxEffectsPerKey int           `json:"max_effects_per_key"`
}

// serveControl answers the fault controls under /_sim/.
func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-cache, no-store")
	route := r.Method + " " + r.URL.Path
	switch route {
	case "POST /_sim/script":
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			controlError(w, http.StatusBadRequest, err)
			return
		}
		steps, err := ParseScript(body)
		if err != nil {
			controlError(w, http.StatusBadRequest, err)
			return
		}
		if err := s.SetScript(steps); err != nil {
			controlError(w, http.StatusBadRequest, err)
			return
		}
		jsonResponse(http.StatusOK, map[string]any{"steps": steps}).write(w)
	case "GET /_sim/script":
		jsonResponse(http.StatusOK, map[string]any{"steps": s.Script()}).write(w)
	case "POST /_sim/faults":
		var f Faults
		dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil && err != io.EOF {
			controlError(w, http.StatusBadRequest, err)
			return
		}
		if err := s.SetFaults(f); err != nil {
			controlError(w, http.StatusBadRequest, err)
			return
		}
		jsonResponse(http.StatusOK, s.Faults()).write(w)
	case "GET /_sim/faults":
		jsonResponse(http.StatusOK, s.Faults()).write(w)
	case "GET /_sim/ledger":
		data := s.ledgerFor(r.URL.Query().Get("idempotency_key"))
		out := ledgerJSON{Object: "list", Account: s.account, Data: data}
		for _, e := range data {
			out.TotalEffects += e.Effects
			if e.IdempotencyKey != "" {
				out.MaxEffectsPerKey = max(out.MaxEffectsPerKey, e.Effects)
			}
		}
		jsonResponse(http.StatusOK, out).write(w)
	case "POST /_sim/reset":
		s.Reset()
		jsonResponse(http.StatusOK, map[string]bool{"reset": true}).write(w)
	case "GET /_sim/webhooks", "POST /_sim/webhooks":
		s.serveWebhooks(w, r)
	case "GET /_sim/stats":
		jsonResponse(http.StatusOK, s.Stats()).write(w)
	default:
		controlError(w, http.StatusNotFound, fmt.Errorf("no control %s", route))
	}
}

func controlError(w http.ResponseWriter, status int, err error) {
	errorResponse(&apiError{status: status, Type: typeInvalidRequest, Message: sanitize(err.Error())}).write(w)
}
