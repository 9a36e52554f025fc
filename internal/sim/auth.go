package sim

import (
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
)

// authenticate checks the API key of r: "Authorization: Bearer KEY", or HTTP
// basic auth with the key as user name (curl -u KEY:). It answers like Stripe:
// 401 invalid_request_error for a missing or unknown key, 403 account_invalid
// for a Stripe-Account header naming another account.
func (s *Server) authenticate(r *http.Request) *apiError {
	auth := strings.TrimSpace(r.Header.Get("Authorization"))
	var key string
	switch {
	case auth == "":
	case hasPrefixFold(auth, "Bearer "):
		key = strings.TrimSpace(auth[len("Bearer "):])
	case hasPrefixFold(auth, "Basic "):
		dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(auth[len("Basic "):]))
		if err != nil {
			return invalidKey("")
		}
		key, _, _ = strings.Cut(string(dec), ":")
	default:
		return invalidKey("")
	}
	if key == "" {
		return &apiError{
			status: http.StatusUnauthorized,
			Type:   typeInvalidRequest,
			Message: "You did not provide an API key. You need to provide your API key in the Authorization header, " +
				"using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication " +
				"for details, or we can help at https://support.stripe.com/.",
			header: http.Header{"Www-Authenticate": {`Bearer realm="Stripe"`}},
		}
	}
	if !s.keyAccepted(key) {
		return invalidKey(key)
	}
	if acct := strings.TrimSpace(r.Header.Get("Stripe-Account")); acct != "" && acct != s.account {
		return &apiError{
			status: http.StatusForbidden,
			Type:   typeInvalidRequest,
			Code:   "account_invalid",
			DocURL: docURL("account_invalid"),
			Message: fmt.Sprintf("The provided key '%s' does not have access to account '%s' (or that account does not exist). "+
				"Application access may have been revoked.", redactKey(key), acct),
		}
	}
	return nil
}

// keyAccepted reports whether key opens this Server.
func (s *Server) keyAccepted(key string) bool {
	if s.secretKey != "" {
		return subtle.ConstantTimeCompare([]byte(key), []byte(s.secretKey)) == 1
	}
	return wellFormedTestKey(key)
}

// wellFormedTestKey reports whether key looks like a test mode secret or
// restricted key: sk_test_ or rk_test_ and 1 to 247 letters, digits or
// underscores.
func wellFormedTestKey(key string) bool {
	rest, ok := strings.CutPrefix(key, "sk_test_")
	if !ok {
		rest, ok = strings.CutPrefix(key, "rk_test_")
	}
	if !ok || rest == "" || len(key) > 255 {
		return false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func invalidKey(key string) *apiError {
	msg := "Invalid API Key provided."
	if key != "" {
		msg = "Invalid API Key provided: " + redactKey(key)
	}
	return &apiError{
		status:  http.StatusUnauthorized,
		Type:    typeInvalidRequest,
		Message: msg,
		header:  http.Header{"Www-Authenticate": {`Bearer realm="Stripe"`}},
	}
}

// redactKey keeps a key's mode prefix and last four characters, as Stripe's
// messages do; anything shorter or oddly shaped is fully masked.
func redactKey(key string) string {
	prefix := ""
	for _, p := range []string{"sk_test_", "sk_live_", "rk_test_", "rk_live_", "pk_test_", "pk_live_"} {
		if strings.HasPrefix(key, p) {
			prefix = p
			break
		}
	}
	rest := key[len(prefix):]
	if len(rest) < 12 {
		return prefix + strings.Repeat("*", min(len(rest), 32))
	}
	return prefix + strings.Repeat("*", min(len(rest)-4, 32)) + sanitize(rest[len(rest)-4:])
}

// sanitize replaces non-printable characters, so echoed input stays ASCII.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
