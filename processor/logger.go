package processor

import (
	"fmt"
	"regexp"

	"go.uber.org/zap"
)

// secretRE matches what must never reach a log: API keys, client secrets, card numbers.
var secretRE = regexp.MustCompile(`(sk|rk|pk)_(test|live)_[A-Za-z0-9]+|pi_[A-Za-z0-9]+_secret_[A-Za-z0-9]+|"client_secret"\s*:\s*"[^"]*"|\b\d{13,19}\b`)

// redact removes secrets from s.
func redact(s string) string { return secretRE.ReplaceAllString(s, "[redacted]") }

// zapLeveled bridges stripe-go's leveled logger to zap. Debug messages, which carry whole
// response bodies, are dropped; the others are redacted.
type zapLeveled struct{ log *zap.Logger }

func (l zapLeveled) Debugf(string, ...interface{}) {}

func (l zapLeveled) Infof(format string, v ...interface{}) {
	l.log.Debug(redact(fmt.Sprintf(format, v...)))
}

func (l zapLeveled) Warnf(format string, v ...interface{}) {
	l.log.Warn(redact(fmt.Sprintf(format, v...)))
}

func (l zapLeveled) Errorf(format string, v ...interface{}) {
	// Failed requests are reported by the retry loop with their class; stripe-go's own
	// account of them stays at debug level so that each failure is logged once.
	l.log.Debug(redact(fmt.Sprintf(format, v...)))
}
