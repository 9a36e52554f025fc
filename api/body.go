package api

import (
	"io"
	"net/http"
)

// maxSizedBody is the largest announced length readAll allocates up front: the body limit
// of the API's POST routes (BodyLimit "64K").
const maxSizedBody = 64 << 10

// readAll reads the whole body of r, as io.ReadAll does. A body whose Content-Length is
// announced is read into one buffer of that length (and a byte to find its end in), not
// into the growing buffers io.ReadAll starts at 512 bytes.
func readAll(r *http.Request) ([]byte, error) {
	n := r.ContentLength
	if n <= 0 || n > maxSizedBody {
		return io.ReadAll(r.Body)
	}
	b := make([]byte, 0, n+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // longer than announced: the reader says what comes of it
		}
		m, err := r.Body.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}
