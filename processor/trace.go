package processor

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
)

// exchange records what happened to one processor request on the wire: whether it was
// written, and the response's status and headers (stripe-go does not surface them for
// answers it cannot parse). It is its own httptrace.ClientTrace, so that one allocation
// holds both.
type exchange struct {
	trace       httptrace.ClientTrace
	mu          sync.Mutex
	wrote       bool // the request was written in full at least once: it may have executed
	writes      int  // how often the transport wrote it (a transparent re-send makes 2)
	writeFailed bool // a write failed: a connection broke under the request
	firstByte   bool // some response byte arrived
	fresh       bool // a connection was dialed for it (recordingTransport): the peer may be a process never asked before
	dialed      bool // a connection was dialed for the round trip under way (recordingTransport)
	status      int
	header      http.Header
}

type exchangeKey struct{}

// withExchange returns a context that records the request made with it into a new exchange.
func withExchange(ctx context.Context) (context.Context, *exchange) {
	ex := &exchange{}
	ex.trace = httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if !info.Reused {
				ex.mu.Lock()
				ex.dialed = true
				ex.mu.Unlock()
			}
		},
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			ex.mu.Lock()
			defer ex.mu.Unlock()
			if info.Err == nil {
				// Sticky: once written, a later failure or a re-send on another connection
				// never makes the request unsent.
				ex.wrote = true
				ex.writes++
			} else {
				ex.writeFailed = true
			}
		},
		GotFirstResponseByte: func() {
			ex.mu.Lock()
			ex.firstByte = true
			ex.mu.Unlock()
		},
	}
	ctx = httptrace.WithClientTrace(ctx, &ex.trace)
	return context.WithValue(ctx, exchangeKey{}, ex), ex
}

func (ex *exchange) snapshot() (wrote bool, writes int, status int, header http.Header) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.wrote, ex.writes, ex.status, ex.header
}

// recordingTransport stores each response's status and headers in the request's exchange,
// and tells its connHook of every request whose connection failed.
type recordingTransport struct {
	base http.RoundTripper
	hook *connHook
}

func (t recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if ex == nil {
		return t.roundTripAlone(req)
	}
	// The exchange's own trace tells of a connection dialed for this round trip.
	ex.mu.Lock()
	ex.dialed = false
	ex.mu.Unlock()
	resp, err := t.base.RoundTrip(req)
	ex.mu.Lock()
	ex.fresh = ex.fresh || ex.dialed
	if resp != nil {
		// Shared, not copied: no one writes a response's header once the transport has
		// returned it.
		ex.status = resp.StatusCode
		ex.header = resp.Header
	}
	// A write that failed, or a request the transport wrote twice (it re-sends on a fresh
	// connection when a reused one broke), saw a connection fail under it.
	broke := connBroke(req, err, ex.dialed) || ex.writeFailed || ex.writes > 1
	ex.mu.Unlock()
	if broke {
		t.hook.failed()
	}
	return resp, err
}

// roundTripAlone is RoundTrip for a request made without an exchange, with a trace of its
// own to learn of a dialed connection.
func (t recordingTransport) roundTripAlone(req *http.Request) (*http.Response, error) {
	var dialed atomic.Bool
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if !info.Reused {
				dialed.Store(true)
			}
		},
	}))
	resp, err := t.base.RoundTrip(req)
	if connBroke(req, err, dialed.Load()) {
		t.hook.failed()
	}
	return resp, err
}

// connBroke reports whether the round trip of req, which ended with err, saw a connection
// fail: it failed without an answer while its context had not ended, or a connection was
// dialed for it. A connection dialed for a request other than the account's own read puts
// the account in doubt too: the process behind the address may have been restarted (as
// another account) while its old connections closed quietly.
func connBroke(req *http.Request, err error, dialed bool) bool {
	return (err != nil && req.Context().Err() == nil) || (dialed && req.URL.Path != accountPath)
}

// accountPath is the path of the processor's account read, which never puts the account in
// doubt itself.
const accountPath = "/v1/account"

// connHook holds what to call when a request to the processor failed without an answer, or
// its connection broke under it: refused, reset, closed, unreachable; or went over a newly
// dialed connection. A request that ended because its context did (a timeout, a
// cancellation) is not such a failure.
type connHook struct {
	f atomic.Pointer[func()]
}

func (h *connHook) failed() {
	if h == nil {
		return
	}
	if f := h.f.Load(); f != nil {
		(*f)()
	}
}

// freshConn reports whether a connection was dialed for the request.
func (ex *exchange) freshConn() bool {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.fresh
}
