package jobs

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestForMerchantKeepsMetadata(t *testing.T) {
	t.Parallel()
	in := &river.InsertOpts{Metadata: []byte(`{"trace":"t_1"}`), Queue: QueueReconcile}
	out, err := ForMerchant(in, "m_1")
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]string
	if err := json.Unmarshal(out.Metadata, &meta); err != nil {
		t.Fatal(err)
	}
	if meta["trace"] != "t_1" || meta[metaMerchant] != "m_1" || out.Queue != QueueReconcile {
		t.Fatalf("ForMerchant: got metadata %v in queue %q, want trace and merchant in %q", meta, out.Queue, QueueReconcile)
	}
	if string(in.Metadata) != `{"trace":"t_1"}` {
		t.Fatalf("ForMerchant changed its input: got %s", in.Metadata)
	}
	if _, err := ForMerchant(&river.InsertOpts{Metadata: []byte(`[`)}, "m_1"); err == nil {
		t.Fatal("ForMerchant on invalid metadata: got nil error, want one")
	}
}

func TestRiverLogsReachZap(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.InfoLevel)
	log := newSlogLogger(zap.New(core)).With("client_id", "c_1").WithGroup("job")
	log.Debug("hidden")
	log.Warn("stuck", "job_id", int64(7), slog.Duration("duration", time.Second))
	if logs.Len() != 1 {
		t.Fatalf("entries: got %d, want 1 (debug filtered)", logs.Len())
	}
	e := logs.All()[0]
	fields := e.ContextMap()
	if e.Level != zapcore.WarnLevel || e.Message != "stuck" || fields["client_id"] != "c_1" || fields["job.job_id"] != int64(7) || fields["job.duration"] != time.Second {
		t.Fatalf("entry: got %s %q %v, want warn \"stuck\" with client_id, job.job_id and job.duration", e.Level, e.Message, fields)
	}
}

func TestRiverRoutineLogsAtDebug(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		level     zapcore.Level
		wantCount int
		wantLevel zapcore.Level
	}{
		{zapcore.InfoLevel, 1, zapcore.InfoLevel},
		{zapcore.DebugLevel, 3, zapcore.DebugLevel},
	} {
		core, logs := observer.New(tt.level)
		log := newSlogLogger(zap.New(core))
		log.Info("producer: Producer job counts", "num_jobs_running", 1)
		log.Info("JobCleaner: Ran successfully", "num_jobs_deleted", 0)
		log.Info("River client started")
		if logs.Len() != tt.wantCount {
			t.Fatalf("at %s: entries: got %d, want %d", tt.level, logs.Len(), tt.wantCount)
		}
		if got := logs.All()[0].Level; got != tt.wantLevel {
			t.Errorf("at %s: first entry's level: got %s, want %s", tt.level, got, tt.wantLevel)
		}
		if got := logs.All()[logs.Len()-1]; got.Message != "River client started" || got.Level != zapcore.InfoLevel {
			t.Errorf("at %s: last entry: got %s %q, want info \"River client started\"", tt.level, got.Level, got.Message)
		}
	}
}
