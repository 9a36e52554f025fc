package jobs

import (
	"context"
	"fmt"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"go.uber.org/zap"
)

// errorHandler logs every failed attempt once, saying whether River will try again or the
// job is now a dead letter. It never changes River's decision.
type errorHandler struct {
	log *zap.Logger
}

var _ river.ErrorHandler = (*errorHandler)(nil)

func (h *errorHandler) HandleError(_ context.Context, job *rivertype.JobRow, err error) *river.ErrorHandlerResult {
	h.log.Warn("job attempt failed", append(jobFields(job), zap.Error(err))...)
	return nil
}

func (h *errorHandler) HandlePanic(_ context.Context, job *rivertype.JobRow, panicVal any, _ string) *river.ErrorHandlerResult {
	h.log.Error("job attempt panicked", append(jobFields(job), zap.String("panic", fmt.Sprint(panicVal)))...)
	return nil
}

func jobFields(job *rivertype.JobRow) []zap.Field {
	return []zap.Field{
		zap.Int64("job_id", job.ID),
		zap.String("kind", job.Kind),
		zap.String("queue", job.Queue),
		zap.Int("attempt", job.Attempt),
		zap.Int("max_attempts", job.MaxAttempts),
		// The attempt that just failed was the last one River makes: the job is discarded.
		zap.Bool("dead", job.Attempt >= job.MaxAttempts),
	}
}
