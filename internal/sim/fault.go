package sim

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// Step is one scripted fault, applied to one write request (a POST to /v1/).
// The zero Step lets the request through untouched. See the package
// documentation for what a client sees for each.
type Step struct {
	// Status answers the request with this HTTP status in Stripe's error
	// shape before it executes (nothing is stored under its key), unless
	// AfterCommit is set. 200 (or 0) lets the request through.
	Status int `json:"status,omitempty"`
	// RetryAfter is sent as the Retry-After header, verbatim: delta
	// seconds, an HTTP-date or, to test a client, anything else printable.
	// JSON accepts a string or a number.
	RetryAfter string `json:"retry_after,omitempty"`
	// Code overrides the error code of Status (defaults: 429 rate_limit,
	// 409 idempotency_key_in_use; e.g. "lock_timeout"). With status 402 it is
	// the card error's code (card_declined, expired_card,
	// card_decline_rate_limit_exceeded, ...).
	Code string `json:"code,omitempty"`
	// DeclineCode, NetworkDeclineCode, AdviceCode and NetworkAdviceCode go with
	// status 402: the card error's decline_code, network_decline_code,
	// advice_code and network_advice_code. A 402 step executes the request and
	// declines its payment with them, stored under the key like any decline.
	DeclineCode        string `json:"decline_code,omitempty"`
	NetworkDeclineCode string `json:"network_decline_code,omitempty"`
	AdviceCode         string `json:"advice_code,omitempty"`
	NetworkAdviceCode  string `json:"network_advice_code,omitempty"`
	// Message overrides the error message.
	Message string `json:"message,omitempty"`
	// ShouldRetry, when set, sends Stripe-Should-Retry: true or false.
	ShouldRetry *bool `json:"should_retry,omitempty"`
	// Date, when set, replaces the Date header (to skew the server clock
	// a client sees).
	Date string `json:"date,omitempty"`
	// DelayMS waits this long before anything else, outside the
	// idempotency layer (the key is not held). The request goes on even if
	// the client has gone.
	DelayMS int `json:"delay_ms,omitempty"`
	// ProcessingMS holds the request this long inside the idempotency
	// layer, key held, before it executes: a retry meanwhile gets 409
	// idempotency_key_in_use, and the effect happens even if the client
	// has gone.
	ProcessingMS int `json:"processing_ms,omitempty"`
	// DropResponse loses the answer: the request executes as usual (its
	// answer is stored under the key), then the connection is closed
	// without a usable answer.
	DropResponse bool `json:"drop_response,omitempty"`
	// Refuse resets the connection without executing or answering.
	Refuse bool `json:"refuse,omitempty"`
	// AfterCommit executes the request, then answers Status (default 500)
	// and stores that answer under the key, as Stripe stores a 500.
	AfterCommit bool `json:"after_commit,omitempty"`
	// Blackhole reads the request and never executes or answers it; the
	// connection is held until the client goes away, the script is reset
	// or the Server is closed.
	Blackhole bool `json:"blackhole,omitempty"`
}

// UnmarshalJSON decodes a step, accepting retry_after as a string or a
// number and refusing unknown fields.
func (st *Step) UnmarshalJSON(b []byte) error {
	type plain Step
	var raw struct {
		plain
		RetryAfter json.RawMessage `json:"retry_after,omitempty"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	*st = Step(raw.plain)
	st.RetryAfter = ""
	if len(raw.RetryAfter) > 0 && string(raw.RetryAfter) != "null" {
		var s string
		if err := json.Unmarshal(raw.RetryAfter, &s); err != nil {
			var n json.Number
			if err := json.Unmarshal(raw.RetryAfter, &n); err != nil {
				return fmt.Errorf("retry_after: want a string or a number, got %s", raw.RetryAfter)
			}
			s = n.String()
		}
		st.RetryAfter = s
	}
	return nil
}

const maxHoldMS = 10 * 60 * 1000

// Validate reports the first problem with st: a status outside 200 and
// 400–599, conflicting actions, negative or over ten minute waits, decline
// fields without status 402, or a header value or code that is not printable
// ASCII.
func (st Step) Validate() error {
	declineFields := st.DeclineCode != "" || st.NetworkDeclineCode != "" || st.AdviceCode != "" || st.NetworkAdviceCode != ""
	switch {
	case st.Status != 0 && st.Status != http.StatusOK && (st.Status < 400 || st.Status > 599):
		return fmt.Errorf("status %d: want 200 or 400-599", st.Status)
	case st.DelayMS < 0 || st.DelayMS > maxHoldMS:
		return fmt.Errorf("delay_ms %d: want 0-%d", st.DelayMS, maxHoldMS)
	case st.ProcessingMS < 0 || st.ProcessingMS > maxHoldMS:
		return fmt.Errorf("processing_ms %d: want 0-%d", st.ProcessingMS, maxHoldMS)
	case st.Refuse && (st.Blackhole || st.DropResponse || st.AfterCommit || st.ProcessingMS > 0 || st.answers()):
		return errors.New("refuse: combines only with delay_ms")
	case st.Blackhole && (st.DropResponse || st.AfterCommit || st.ProcessingMS > 0 || st.answers()):
		return errors.New("blackhole: combines only with delay_ms")
	case st.answers() && (st.DropResponse || st.ProcessingMS > 0):
		return errors.New("status without after_commit answers before execution: nothing to drop or process")
	case st.AfterCommit && st.Status == http.StatusOK:
		return errors.New("after_commit: want an error status")
	case st.AfterCommit && st.Status == http.StatusPaymentRequired:
		return errors.New("after_commit: a 402 step executes the request already, and declines it")
	case declineFields && st.Status != http.StatusPaymentRequired:
		return errors.New("decline_code, network_decline_code, advice_code, network_advice_code: only with status 402")
	}
	for name, v := range map[string]string{"retry_after": st.RetryAfter, "date": st.Date, "code": st.Code, "message": st.Message,
		"decline_code": st.DeclineCode, "network_decline_code": st.NetworkDeclineCode, "advice_code": st.AdviceCode,
		"network_advice_code": st.NetworkAdviceCode} {
		if len(v) > 500 {
			return fmt.Errorf("%s: longer than 500 characters", name)
		}
		for i := 0; i < len(v); i++ {
			if v[i] < 0x20 || v[i] > 0x7e {
				return fmt.Errorf("%s: only printable ASCII", name)
			}
		}
	}
	return nil
}

// answers reports whether st answers with an error before execution: a 402 executes and
// declines instead (see declines).
func (st Step) answers() bool {
	return st.Status >= 400 && !st.AfterCommit && st.Status != http.StatusPaymentRequired
}

// declines returns the card error a 402 step declines the confirmation with, and false for
// any other step. Without code nor decline_code it is Stripe's generic decline; with a
// decline_code alone, Stripe's code for it (card_declined, or the decline code itself for
// expired_card, incorrect_cvc, ...); with a code alone, a card error without a decline_code
// (card_decline_rate_limit_exceeded, say).
func (st Step) declines() (decline, bool) {
	if st.Status != http.StatusPaymentRequired {
		return decline{}, false
	}
	var d decline
	switch {
	case st.Code == "":
		d = newDecline(cmp.Or(st.DeclineCode, "generic_decline"))
	default:
		d = decline{code: st.Code, declineCode: st.DeclineCode, param: ownErrorCode[st.Code]}
		d.message = cmp.Or(declineMessages[st.DeclineCode], declineMessages[st.Code], genericDeclineMessage)
	}
	d.networkDeclineCode, d.adviceCode, d.networkAdviceCode = st.NetworkDeclineCode, st.AdviceCode, st.NetworkAdviceCode
	if st.Message != "" {
		d.message = st.Message
	}
	return d, true
}

// commitStatus is the status stored after execution, 0 for the real answer.
func (st Step) commitStatus() int {
	if !st.AfterCommit {
		return 0
	}
	if st.Status == 0 {
		return http.StatusInternalServerError
	}
	return st.Status
}

// apiError renders the step's error answer with the given status.
func (st Step) apiError(status int) *apiError {
	e := statusError(status, st.Code, st.Message)
	if e.header == nil {
		e.header = http.Header{}
	}
	if st.RetryAfter != "" {
		e.header.Set("Retry-After", st.RetryAfter)
	}
	if st.ShouldRetry != nil {
		e.header.Set("Stripe-Should-Retry", strconv.FormatBool(*st.ShouldRetry))
	}
	return e
}

// Faults configures random faults, drawn for each API request that no
// scripted step covers.
type Faults struct {
	// ErrorRate is the probability (0–1) that a write request is answered
	// Status before it executes.
	ErrorRate float64 `json:"error_rate"`
	// LatencyMS delays every API request, reads included, outside the
	// idempotency layer.
	LatencyMS int `json:"latency_ms"`
	// Status is the random error's status; 0 means 503.
	Status int `json:"status,omitempty"`
	// RetryAfter is sent with each random error, when set.
	RetryAfter string `json:"retry_after,omitempty"`
	// IncludeReads applies ErrorRate to GET requests as well.
	IncludeReads bool `json:"include_reads,omitempty"`
	// Seed, when set, reseeds the random source, so a run repeats.
	Seed *uint64 `json:"seed,omitempty"`
}

// Validate reports the first out-of-range field of f.
func (f Faults) Validate() error {
	switch {
	case f.ErrorRate < 0 || f.ErrorRate > 1 || f.ErrorRate != f.ErrorRate:
		return fmt.Errorf("error_rate %v: want 0-1", f.ErrorRate)
	case f.LatencyMS < 0 || f.LatencyMS > maxHoldMS:
		return fmt.Errorf("latency_ms %d: want 0-%d", f.LatencyMS, maxHoldMS)
	case f.Status != 0 && (f.Status < 400 || f.Status > 599):
		return fmt.Errorf("status %d: want 400-599", f.Status)
	}
	return Step{RetryAfter: f.RetryAfter}.Validate()
}

// draw returns the step random faults give a request; ok is false when they
// do nothing.
func (f Faults) draw(rng *rand.Rand, write bool) (Step, bool) {
	var st Step
	st.DelayMS = f.LatencyMS
	if f.ErrorRate > 0 && (write || f.IncludeReads) && rng.Float64() < f.ErrorRate {
		st.Status = f.Status
		if st.Status == 0 {
			st.Status = http.StatusServiceUnavailable
		}
		st.RetryAfter = f.RetryAfter
	}
	return st, st != (Step{})
}

// ParseScript decodes a script: a JSON list of steps, or an object
// {"steps": [...]}; every step must be valid.
func ParseScript(b []byte) ([]Step, error) {
	var steps []Step
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var obj struct {
			Steps []Step `json:"steps"`
		}
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&obj); err != nil {
			return nil, err
		}
		steps = obj.Steps
	} else if err := json.Unmarshal(trimmed, &steps); err != nil {
		return nil, err
	}
	for i, st := range steps {
		if err := st.Validate(); err != nil {
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
	}
	if steps == nil {
		steps = []Step{}
	}
	return steps, nil
}

func millis(n int) time.Duration {
	return time.Duration(n) * time.Millisecond
}
