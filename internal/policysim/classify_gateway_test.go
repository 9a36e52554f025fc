package policysim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/retry"
)

// This file checks that a scripted answer means what it would mean on the wire: every
// step's answer (Step.Answer) is played, in Stripe's shape, to the gateway's processor
// adapter (processor.Client, over HTTP through stripe-go, as paygate serve runs it), and the
// adapter's classification of what it read is the one Classify gives the step.

// wireAnswer is the answer step s stands for (Step.Answer) as it looks on the wire, in
// Stripe's shape: a succeeded PaymentIntent for a 2xx, a page that is not JSON for a 3xx,
// Stripe's error envelope otherwise, with its headers.
func wireAnswer(s Step) (status int, header http.Header, body string) {
	a := s.Answer()
	header = http.Header{}
	if a.RetryAfter != "" {
		header.Set("Retry-After", a.RetryAfter)
	}
	if s.HasDate {
		if a.Date == "" {
			header["Date"] = nil // no Date header at all
		} else {
			header.Set("Date", a.Date)
		}
	}
	if a.ShouldRetry != "" {
		header.Set("Stripe-Should-Retry", a.ShouldRetry)
	}
	if a.Replayed {
		header.Set("Idempotent-Replayed", "true")
	}
	switch {
	case a.Intent != "":
		header.Set("Content-Type", "application/json")
		return a.Status, header, `{"id": "pi_wire", "object": "payment_intent", "amount": 1000, "currency": "usd", "status": "` + a.Intent + `"}`
	case a.Unparsed:
		header.Set("Content-Type", "text/html")
		return a.Status, header, "<html>moved</html>"
	}
	e := map[string]string{"message": "scripted", "type": a.ErrorType, "code": a.Code, "decline_code": a.DeclineCode}
	for k, v := range e {
		if v == "" {
			delete(e, k)
		}
	}
	b, err := json.Marshal(map[string]any{"error": e})
	if err != nil {
		panic(err)
	}
	header.Set("Content-Type", "application/json")
	return a.Status, header, string(b)
}

// wire is a processor that answers each request with the scripted step its
// idempotency key (a write) or its PaymentIntent id (a read) names.
type wire struct {
	mu    sync.Mutex
	steps map[string]Step
}

func (wr *wire) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := r.Header.Get("Idempotency-Key")
	if r.Method == http.MethodGet {
		name = strings.TrimPrefix(r.URL.Path, "/v1/payment_intents/")
	}
	wr.mu.Lock()
	s, ok := wr.steps[name]
	wr.mu.Unlock()
	if !ok {
		http.Error(w, "no such step "+name, http.StatusTeapot)
		return
	}
	_, _ = io.Copy(io.Discard, r.Body) // the request was read in full
	switch {
	case s.Timeout:
		// Never answer: the client times out after sending.
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
		return
	case s.Dropped:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	status, header, body := wireAnswer(s)
	for k, v := range header {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// gatewayOutcome plays step s to the gateway's processor adapter and
// returns the adapter's classification: of CreatePayment for a write, of
// Retrieve for a read.
func gatewayOutcome(t *testing.T, live, refused *processor.Client, wr *wire, name string, s Step, read bool) retry.Outcome {
	t.Helper()
	wr.mu.Lock()
	wr.steps[name] = s
	wr.mu.Unlock()
	c := live
	if s.Refused {
		c = refused
	}
	timeout := 5 * time.Second
	if s.Timeout {
		timeout = 200 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if read {
		_, r := c.Retrieve(ctx, name)
		return r.Outcome
	}
	a := c.CreatePayment(ctx, processor.PaymentParams{Key: name, ChargeID: "ch_" + name, Amount: 1000,
		Currency: "usd", PaymentMethod: "pm_card_visa"})
	return a.Outcome
}

// classifySteps are the scripted answers the comparison walks: every status
// class and the statuses and body codes the gateway tells apart, with and
// without Stripe-Should-Retry and Idempotent-Replayed, and the steps without
// an answer.
func classifySteps() []Step {
	statuses := []int{200, 201, 202, 302, 400, 401, 402, 403, 404, 408, 409, 410, 422, 424, 429,
		500, 501, 502, 503, 504, 599}
	// Card errors as Stripe sends them ("Error codes", "Decline codes"): a code of its own
	// (expired_card, card_decline_rate_limit_exceeded without a decline_code) or
	// card_declined with a decline_code.
	codes := []string{"", "lock_timeout", "idempotency_key_in_use", "idempotency_error", "rate_limit",
		"resource_missing", "parameter_missing", "card_declined", "insufficient_funds", "expired_card", "api_error",
		"card_decline_rate_limit_exceeded", "incorrect_address", "duplicate_transaction", "pin_try_exceeded"}
	var steps []Step
	for _, status := range statuses {
		for _, code := range codes {
			for _, shouldRetry := range []string{"", "true", "false"} {
				for _, replayed := range []bool{false, true} {
					steps = append(steps, Step{Status: status, BodyCode: code, ShouldRetry: shouldRetry, Replayed: replayed})
				}
			}
		}
	}
	steps = append(steps,
		Step{Status: 429, RetryAfter: "30"},
		Step{Status: 503, RetryAfter: "Mon, 02 Mar 2026 12:00:03 GMT", Date: "Mon, 02 Mar 2026 12:00:00 GMT", HasDate: true},
		// Headers a processor may send that the loop does not read: passed on as they came.
		Step{Status: 429, RetryAfter: "soon"},
		Step{Status: 503, RetryAfter: "Mon, 02 Mar 2026 12:00:03 GMT", Date: "yesterday", HasDate: true},
		Step{Status: 424, RetryAfter: "Mon, 02 Mar 2026 23:59:60 GMT", Date: "Mon, 02 Mar 2076 12:00:00 GMT", HasDate: true},
		Step{Timeout: true}, Step{Dropped: true}, Step{Refused: true},
	)
	return steps
}

// describe names a step for a failure message.
func describe(s Step) string {
	switch {
	case s.Timeout:
		return "timeout"
	case s.Dropped:
		return "dropped"
	case s.Refused:
		return "refused"
	}
	d := strconv.Itoa(s.Status)
	if s.BodyCode != "" {
		d += " " + s.BodyCode
	}
	if s.ShouldRetry != "" {
		d += " should_retry=" + s.ShouldRetry
	}
	if s.Replayed {
		d += " replayed"
	}
	if s.RetryAfter != "" {
		d += " retry_after=" + s.RetryAfter
	}
	return d
}

// TestClassifyMatchesGateway: for every scripted answer, writes and reads,
// Classify gives the class, the verdict on whether the request may have
// executed, the processor code and the headers that the gateway's processor
// adapter gives the same answer on the wire.
func TestClassifyMatchesGateway(t *testing.T) {
	t.Parallel()
	wr := &wire{steps: map[string]Step{}}
	srv := httptest.NewServer(wr)
	t.Cleanup(srv.Close)
	live, err := processor.New(processor.Config{SecretKey: "sk_test_wire", BaseURL: srv.URL})
	if err != nil {
		t.Fatalf("processor.New: got error %v, want nil", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: got error %v, want nil", err)
	}
	closed := "http://" + l.Addr().String()
	l.Close() // nothing listens there: connections are refused before anything is sent
	refused, err := processor.New(processor.Config{SecretKey: "sk_test_wire", BaseURL: closed})
	if err != nil {
		t.Fatalf("processor.New: got error %v, want nil", err)
	}
	for _, read := range []bool{false, true} {
		kind := "write"
		if read {
			kind = "read"
		}
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			steps := classifySteps()
			var wg sync.WaitGroup
			sem := make(chan struct{}, 16)
			var mu sync.Mutex
			var mismatches []string
			for i, s := range steps {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					name := fmt.Sprintf("%s_%d", kind, i)
					want := gatewayOutcome(t, live, refused, wr, name, s, read)
					got := Classify(s, read)
					if msg := compareOutcomes(got, want); msg != "" {
						mu.Lock()
						mismatches = append(mismatches, fmt.Sprintf("%s %s: %s", kind, describe(s), msg))
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			for _, m := range mismatches {
				t.Error(m)
			}
		})
	}
}

// compareOutcomes describes how got differs from the gateway's want, or
// returns "".
func compareOutcomes(got, want retry.Outcome) string {
	var diffs []string
	if got.Class != want.Class {
		diffs = append(diffs, fmt.Sprintf("class got %s, want %s", got.Class, want.Class))
	}
	gotMaybe := got.MaybeExecuted || got.Class.Executed()
	wantMaybe := want.MaybeExecuted || want.Class.Executed()
	if gotMaybe != wantMaybe {
		diffs = append(diffs, fmt.Sprintf("may have executed got %v, want %v", gotMaybe, wantMaybe))
	}
	if got.HTTPStatus != want.HTTPStatus {
		diffs = append(diffs, fmt.Sprintf("HTTP status got %d, want %d", got.HTTPStatus, want.HTTPStatus))
	}
	if got.ProcessorCode != want.ProcessorCode {
		diffs = append(diffs, fmt.Sprintf("code got %q, want %q", got.ProcessorCode, want.ProcessorCode))
	}
	if got.RetryAfter != want.RetryAfter {
		diffs = append(diffs, fmt.Sprintf("Retry-After got %q, want %q", got.RetryAfter, want.RetryAfter))
	}
	if got.Canceled != want.Canceled {
		diffs = append(diffs, fmt.Sprintf("canceled got %v, want %v", got.Canceled, want.Canceled))
	}
	return strings.Join(diffs, "; ")
}
