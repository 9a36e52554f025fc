package sim

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
)

// maxBody bounds a request body.
const maxBody = 1 << 20

// hijack takes the connection over from net/http. Where that is impossible
// (HTTP/2) the handler aborts, which resets the stream.
func hijack(w http.ResponseWriter) net.Conn {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	return conn
}

// resetConnection reads what is left of the request body, then closes the
// connection with a TCP reset, unanswered. Reading the body first makes what
// the client sees independent of timing: its request is always fully
// written, and the reset always comes while it waits for the answer. (A
// client that sends the head and the body in separate writes, as net/http
// does for stripe-go's requests, would otherwise sometimes fail writing the
// body and sometimes fail reading the answer.)
func resetConnection(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxBody))
	conn := hijack(w)
	raw := conn
	if tc, ok := raw.(*tls.Conn); ok {
		raw = tc.NetConn()
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// closeConnection closes the connection without answering.
func closeConnection(w http.ResponseWriter) {
	_ = hijack(w).Close()
}

// dropConnection sends the status line of resp without its line end, then
// closes the connection: no answer a client can use. Go's net/http reports
// "unexpected EOF", curl "Empty reply from server". Sending these few bytes,
// rather than none, keeps Go's http.Transport from silently resending the
// request when the connection was a reused one.
func dropConnection(w http.ResponseWriter, resp response) {
	conn := hijack(w)
	_, _ = fmt.Fprintf(conn, "HTTP/1.1 %d %s", resp.status, http.StatusText(resp.status))
	_ = conn.Close()
}

// hold reads the request, then keeps the connection unanswered until the
// client goes away, the script is reset or the Server closes.
func (s *Server) hold(w http.ResponseWriter, r *http.Request, release <-chan struct{}) {
	_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxBody))
	s.held.Add(1)
	defer s.held.Add(-1)
	select {
	case <-r.Context().Done():
	case <-release:
	case <-s.closed:
	}
	closeConnection(w)
}
