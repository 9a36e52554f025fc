package event

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// Header names of a delivery.
const (
	SignatureHeader = "Paygate-Signature"
	EventIDHeader   = "Paygate-Event-Id"
)

// Sign returns the Paygate-Signature of body sent at t with secrets: "t=<unix seconds>"
// and, for each secret, ",v1=" and the hex HMAC-SHA256 of "<t>.<body>" under it.
func Sign(body []byte, t time.Time, secrets ...string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	var b strings.Builder
	b.WriteString("t=")
	b.WriteString(ts)
	for _, s := range secrets {
		b.WriteString(",v1=")
		b.WriteString(MAC(s, ts, body))
	}
	return b.String()
}

// MAC is the hex HMAC-SHA256 under secret of "<ts>.<body>".
func MAC(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}
