package event

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Endpoint is a merchant's webhook endpoint.
type Endpoint struct {
	ID         string
	MerchantID string
	URL        string
	Events     []Type
	CreatedAt  time.Time
	// Secret signs every delivery. Previous, until PreviousExpiresAt, signs them too: the
	// secret a rotation replaced.
	Secret            string
	Previous          string
	PreviousExpiresAt *time.Time
	// FailingSince is the first failed delivery since the last that succeeded.
	FailingSince *time.Time
	// DisabledAt and DisabledReason say that and why deliveries to it stopped.
	DisabledAt     *time.Time
	DisabledReason string
	// DeletedAt is when the merchant deleted it; nil while it lives.
	DeletedAt *time.Time
}

// Subscribes reports whether the endpoint wants events of type t.
func (e *Endpoint) Subscribes(t Type) bool { return slices.Contains(e.Events, t) }

// Secrets returns the secrets that sign a delivery at now: the endpoint's, and the one a
// rotation replaced while it still signs.
func (e *Endpoint) Secrets(now time.Time) []string {
	out := []string{e.Secret}
	if e.Previous != "" && e.PreviousExpiresAt != nil && now.Before(*e.PreviousExpiresAt) {
		out = append(out, e.Previous)
	}
	return out
}

// State is how an operator sees the endpoint: "enabled", "failing" or "disabled".
func (e *Endpoint) State() string {
	switch {
	case e.DisabledAt != nil:
		return "disabled"
	case e.FailingSince != nil:
		return "failing"
	}
	return "enabled"
}

// RotationOverlap is how long the secret a rotation replaced keeps signing.
const RotationOverlap = 24 * time.Hour

// NewEndpointID returns a new endpoint id.
func NewEndpointID() string { return "we_" + strings.ToLower(rand.Text()) }

// NewSecret returns a new signing secret: "whsec_" and 32 random bytes in base32.
func NewSecret() string {
	return "whsec_" + strings.ToLower(rand.Text()) + strings.ToLower(rand.Text())
}

// URLError is a refused endpoint URL: Code says why ("url_invalid", "url_insecure",
// "url_forbidden"), Message in words.
type URLError struct {
	Code    string
	Message string
}

func (e *URLError) Error() string { return "event: " + e.Message }

// MaxURLLength bounds an endpoint URL.
const MaxURLLength = 2048

// Resolver resolves a host name to its addresses (nil: the system resolver).
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// CheckURL checks an endpoint URL at registration: an absolute https:// URL, or http:// to
// a loopback address when allowHTTP is set; no user info, no fragment; a host that is and
// resolves to no private, link-local, metadata or otherwise internal address (loopback only
// over allowed http://). A name that does not resolve now is accepted: the dialer checks
// what it resolves to at each delivery (Dialer). It returns a *URLError.
func CheckURL(ctx context.Context, raw string, allowHTTP bool, resolve Resolver) error {
	if raw == "" || len(raw) > MaxURLLength || strings.ContainsAny(raw, " \t\r\n\\") {
		return &URLError{Code: "url_invalid", Message: fmt.Sprintf("url must be an absolute URL of at most %d characters", MaxURLLength)}
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return &URLError{Code: "url_invalid", Message: "url must be an absolute https:// URL"}
	}
	if u.User != nil || u.Fragment != "" {
		return &URLError{Code: "url_invalid", Message: "url must not carry user information or a fragment"}
	}
	host := u.Hostname()
	switch u.Scheme {
	case "https":
	case "http":
		if !allowHTTP {
			return &URLError{Code: "url_insecure", Message: "url must be https:// (http:// only to a loopback address when PAYGATE_WEBHOOK_ALLOW_HTTP=1)"}
		}
	default:
		return &URLError{Code: "url_invalid", Message: "url must be an https:// URL"}
	}
	if p := u.Port(); p != "" {
		if n, err := parsePort(p); err != nil || n == 0 {
			return &URLError{Code: "url_invalid", Message: "url has an invalid port"}
		}
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		if resolve == nil {
			resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			}
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		addrs, err = resolve(rctx, host)
		cancel()
		if err != nil {
			// A name that does not resolve now may resolve later (a record not yet
			// published, a resolver down): it is accepted, and every delivery's dial checks
			// the addresses it resolves to then.
			addrs = nil
		}
	}
	plainHTTP := u.Scheme == "http"
	if plainHTTP && len(addrs) == 0 {
		return &URLError{Code: "url_insecure", Message: "http:// is allowed only to a loopback address"}
	}
	for _, a := range addrs {
		if err := checkAddr(a, plainHTTP && allowHTTP, plainHTTP); err != nil {
			return err
		}
	}
	return nil
}

func parsePort(p string) (int, error) {
	n := 0
	for _, r := range p {
		if r < '0' || r > '9' {
			return 0, errors.New("not a number")
		}
		n = n*10 + int(r-'0')
		if n > 65535 {
			return 0, errors.New("out of range")
		}
	}
	return n, nil
}

// metadata are the cloud metadata services' addresses that are not link-local.
var metadata = []netip.Prefix{
	netip.MustParsePrefix("100.100.100.200/32"), // Alibaba Cloud
	netip.MustParsePrefix("fd00:ec2::254/128"),  // AWS over IPv6
}

// forbidden are the ranges no delivery may reach besides the private, loopback, link-local,
// multicast and unspecified ones netip classifies.
var forbidden = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"), // NAT64 of any IPv4 address
	netip.MustParsePrefix("2002::/16"),    // 6to4
}

// checkAddr refuses an address a delivery must not reach: loopback is allowed only when
// loopback is set (plain http:// to this host, in development), and over https:// never.
func checkAddr(a netip.Addr, loopback, plainHTTP bool) error {
	a = a.Unmap()
	if a.IsLoopback() {
		if loopback {
			return nil
		}
		return &URLError{Code: "url_forbidden", Message: "url resolves to a loopback address"}
	}
	if plainHTTP {
		return &URLError{Code: "url_insecure", Message: "http:// is allowed only to a loopback address"}
	}
	switch {
	case !a.IsValid(), a.IsUnspecified(), a.IsPrivate(), a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast(),
		a.IsInterfaceLocalMulticast(), a.IsMulticast():
		return &URLError{Code: "url_forbidden", Message: "url resolves to a private, link-local or internal address"}
	}
	for _, p := range append(metadata, forbidden...) {
		if p.Contains(a) {
			return &URLError{Code: "url_forbidden", Message: "url resolves to a metadata or internal address"}
		}
	}
	return nil
}

// Dialer returns the dialer of deliveries: its Control hook checks every address it
// connects to, after the name was resolved, so that a host that resolved to a public
// address at registration and to a private one now (DNS rebinding) is refused. Loopback is
// allowed only when allowLoopback is set (PAYGATE_WEBHOOK_ALLOW_HTTP=1).
func Dialer(allowLoopback bool) *net.Dialer {
	return &net.Dialer{
		Timeout: 10 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &URLError{Code: "url_forbidden", Message: "delivery to an unparsable address " + address}
			}
			return checkAddr(ap.Addr(), allowLoopback, false)
		},
	}
}
