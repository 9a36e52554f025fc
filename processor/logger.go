package processor

import (
	"fmt"
	"regexp"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// secretRE matches what must never reach a log: API keys, client secrets, card numbers.
var secretRE = regexp.MustCompile(`(sk|rk|pk)_(test|live)_[A-Za-z0-9]+|pi_[A-Za-z0-9]+_secret_[A-Za-z0-9]+|"client_secret"\s*:\s*"[^"]*"|\b\d{13,19}\b`)

// redact removes secrets from s.
func redact(s string) string { return secretRE.ReplaceAllString(s, "[redacted]") }

// zapLeveled bridges stripe-go's leveled logger to zap. Debug messages, which carry whole
// response bodies, are dropped; the others are redacted.
type zapLeveled struct{ log *zap.Logger }

func (l zapLeveled) Debugf(string, ...interface{}) {}

func (l zapLeveled) Infof(format string, v ...interface{}) { l.at(zapcore.DebugLevel, format, v) }

func (l zapLeveled) Warnf(format string, v ...interface{}) { l.at(zapcore.WarnLevel, format, v) }

// Errorf logs at debug level: failed requests are reported by the retry loop with their
// class, so that each failure is logged once.
func (l zapLeveled) Errorf(format string, v ...interface{}) { l.at(zapcore.DebugLevel, format, v) }

// at formats and redacts a message only when its level is enabled: stripe-go logs every
// request, and the gateway must not pay for messages it drops.
func (l zapLeveled) at(level zapcore.Level, format string, v []interface{}) {
	if ce := l.log.Check(level, ""); ce != nil {
		ce.Message = redact(fmt.Sprintf(format, v...))
		ce.Write()
	}
}
