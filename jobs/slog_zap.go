package jobs

import (
	"context"
	"log/slog"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapHandler is a slog.Handler writing to a zap logger, so River's own logs (it logs
// through log/slog) land in paygate's log with the same encoder and level. River's
// attribute keys are already snake_case.
type zapHandler struct {
	log    *zap.Logger
	prefix string // dotted group names, prepended to keys
}

func newSlogLogger(log *zap.Logger) *slog.Logger {
	return slog.New(&zapHandler{log: log})
}

// routineSuffixes end the messages River logs at info on a timer while nothing is wrong:
// the producer's job counts (every few seconds while jobs run) and a maintenance service's
// pass. They are logged at debug, so that an info log holds what an operator acts on.
var routineSuffixes = []string{
	": Producer job counts",
	": Ran successfully",
}

// levelOf is the level a River record is logged at: its own, but debug for a routine
// message logged at info.
func levelOf(r slog.Record) zapcore.Level {
	lvl := zapLevel(r.Level)
	if lvl == zapcore.InfoLevel {
		for _, s := range routineSuffixes {
			if strings.HasSuffix(r.Message, s) {
				return zapcore.DebugLevel
			}
		}
	}
	return lvl
}

// Enabled reports whether the logger may write a record of level. A routine message is
// filtered by Handle, once its text is known.
func (h *zapHandler) Enabled(_ context.Context, level slog.Level) bool {
	return h.log.Core().Enabled(zapLevel(level))
}

func (h *zapHandler) Handle(_ context.Context, r slog.Record) error {
	lvl := levelOf(r)
	if !h.log.Core().Enabled(lvl) {
		return nil
	}
	fields := make([]zap.Field, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		fields = h.appendAttr(fields, h.prefix, a)
		return true
	})
	if ce := h.log.Check(lvl, r.Message); ce != nil {
		ce.Write(fields...)
	}
	return nil
}

func (h *zapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	fields := make([]zap.Field, 0, len(attrs))
	for _, a := range attrs {
		fields = h.appendAttr(fields, h.prefix, a)
	}
	return &zapHandler{log: h.log.With(fields...), prefix: h.prefix}
}

func (h *zapHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &zapHandler{log: h.log, prefix: h.prefix + name + "."}
}

func (h *zapHandler) appendAttr(fields []zap.Field, prefix string, a slog.Attr) []zap.Field {
	v := a.Value.Resolve()
	if a.Key == "" && v.Kind() != slog.KindGroup {
		return fields
	}
	key := prefix + a.Key
	switch v.Kind() {
	case slog.KindGroup:
		inner := prefix
		if a.Key != "" {
			inner = key + "."
		}
		for _, g := range v.Group() {
			fields = h.appendAttr(fields, inner, g)
		}
		return fields
	case slog.KindString:
		return append(fields, zap.String(key, v.String()))
	case slog.KindInt64:
		return append(fields, zap.Int64(key, v.Int64()))
	case slog.KindUint64:
		return append(fields, zap.Uint64(key, v.Uint64()))
	case slog.KindFloat64:
		return append(fields, zap.Float64(key, v.Float64()))
	case slog.KindBool:
		return append(fields, zap.Bool(key, v.Bool()))
	case slog.KindDuration:
		return append(fields, zap.Duration(key, v.Duration()))
	case slog.KindTime:
		return append(fields, zap.Time(key, v.Time()))
	default:
		return append(fields, zap.Any(key, v.Any()))
	}
}

func zapLevel(l slog.Level) zapcore.Level {
	switch {
	case l >= slog.LevelError:
		return zapcore.ErrorLevel
	case l >= slog.LevelWarn:
		return zapcore.WarnLevel
	case l >= slog.LevelInfo:
		return zapcore.InfoLevel
	default:
		return zapcore.DebugLevel
	}
}
