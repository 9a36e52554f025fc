package processor

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"sync"
)

// exchange records what happened to one processor request on the wire: whether it was
// written, and the response's status and headers (stripe-go does not surface them for
// answers it cannot parse).
type exchange struct {
	mu        sync.Mutex
	wrote     bool // the request was written in full at least once: it may have executed
	writes    int  // how often the transport wrote it (a transparent re-send makes 2)
	firstByte bool // some response byte arrived
	status    int
	header    http.Header
}

type exchangeKey struct{}

// withExchange returns a context that records the request made with it into a new exchange.
func withExchange(ctx context.Context) (context.Context, *exchange) {
	ex := &exchange{}
	trace := &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			ex.mu.Lock()
			defer ex.mu.Unlock()
			if info.Err == nil {
				// Sticky: once written, a later failure or a re-send on another connection
				// never makes the request unsent.
				ex.wrote = true
				ex.writes++
			}
		},
		GotFirstResponseByte: func() {
			ex.mu.Lock()
			ex.firstByte = true
			ex.mu.Unlock()
		},
	}
	ctx = httptrace.WithClientTrace(ctx, trace)
	return context.WithValue(ctx, exchangeKey{}, ex), ex
}

func (ex *exchange) snapshot() (wrote bool, writes int, status int, header http.Header) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.wrote, ex.writes, ex.status, ex.header
}

// recordingTransport stores each response's status and headers in the request's exchange.
type recordingTransport struct {
	base http.RoundTripper
}

func (t recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if resp != nil {
		if ex, ok := req.Context().Value(exchangeKey{}).(*exchange); ok {
			ex.mu.Lock()
			ex.status = resp.StatusCode
			ex.header = resp.Header.Clone()
			ex.mu.Unlock()
		}
	}
	return resp, err
}
