package api

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestReadAll: readAll reads what io.ReadAll reads, and fails as it does, whatever the
// announced length says of the body.
func TestReadAll(t *testing.T) {
	t.Parallel()
	errBroken := errors.New("broken")
	body := `{"amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`
	for _, tc := range []struct {
		name   string
		length int64
		body   func() io.Reader
	}{
		{"announced", int64(len(body)), func() io.Reader { return strings.NewReader(body) }},
		{"not announced", -1, func() io.Reader { return strings.NewReader(body) }},
		{"empty", 0, func() io.Reader { return strings.NewReader("") }},
		{"shorter than announced", int64(len(body)) + 10, func() io.Reader { return strings.NewReader(body) }},
		{"longer than announced", 5, func() io.Reader { return strings.NewReader(body) }},
		{"in one-byte reads", int64(len(body)), func() io.Reader { return &oneByteReader{r: strings.NewReader(body)} }},
		{"over the limit", maxSizedBody + 1, func() io.Reader { return strings.NewReader(strings.Repeat("x", maxSizedBody+1)) }},
		{"broken", int64(len(body)), func() io.Reader { return io.MultiReader(strings.NewReader(body[:10]), &failingReader{errBroken}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want, wantErr := io.ReadAll(tc.body())
			r := &http.Request{Body: io.NopCloser(tc.body()), ContentLength: tc.length}
			got, err := readAll(r)
			if !errors.Is(err, wantErr) || (err == nil) != (wantErr == nil) {
				t.Fatalf("error: got %v, want %v", err, wantErr)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
}

type oneByteReader struct{ r io.Reader }

func (o *oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

type failingReader struct{ err error }

func (f *failingReader) Read([]byte) (int, error) { return 0, f.err }
