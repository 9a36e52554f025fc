package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/jobs"
	"github.com/paygate/paygate/store"
)

// TestDeadLetterReplay: a background job that fails ends as a dead letter with its error;
// an operator replays it deliberately, and it runs once more.
func TestDeadLetterReplay(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	op := g.key("m_dead", "operator")

	// An automatic reattempt of a charge that does not exist: the job fails, once (it
	// writes, so River never retries it).
	db, err := store.Open(context.Background(), g.env["DATABASE_URL"], store.Config{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	client, err := river.NewClient(riverpgxv5.New(db.Pool()), &river.Config{}) // insert-only
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := jobs.ForMerchant(&river.InsertOpts{MaxAttempts: 1}, "m_dead")
	if _, err := client.Insert(context.Background(), charge.AutoReattemptArgs{DeclinedID: "ch_missing", MerchantID: "m_dead", NextID: "ch_next"}, opts); err != nil {
		t.Fatal(err)
	}

	dead := func(wantReplays int) map[string]any {
		t.Helper()
		var j map[string]any
		eventually(t, 20*time.Second, func() error {
			r := g.do(http.MethodGet, "/v1/jobs/dead", op, nil, "")
			if r.status != 200 {
				t.Fatalf("dead letters: got %d %s", r.status, r.body)
			}
			if data := r.json(t)["data"].([]any); len(data) == 1 {
				j = data[0].(map[string]any)
				if errs, _ := j["errors"].([]any); len(errs) == wantReplays+1 {
					return nil
				}
			}
			return fmt.Errorf("dead letters: got %s, want one job with %d errors", r.body, wantReplays+1)
		})
		return j
	}
	j := dead(0)
	if j["kind"] != "auto_reattempt" || j["attempts"].(float64) != 1 {
		t.Fatalf("dead letter: got %v, want the auto_reattempt job after one attempt", j)
	}
	if m := g.metrics(); !containsLine(m, "paygate_jobs_dead 1") {
		t.Fatalf("the dead-letter gauge does not count it")
	}
	id := strconv.FormatInt(int64(j["id"].(float64)), 10)
	if r := g.do(http.MethodPost, "/v1/jobs/"+id+"/replay", op, nil, ""); r.status != 200 {
		t.Fatalf("replay: got %d %s, want 200", r.status, r.body)
	}
	dead(1) // it ran once more, and failed again
	if r := g.do(http.MethodPost, "/v1/jobs/999999/replay", op, nil, ""); r.status != 404 {
		t.Fatalf("replay of an unknown job: got %d, want 404", r.status)
	}
	other := g.key("m_other", "operator")
	if r := g.do(http.MethodGet, "/v1/jobs/dead", other, nil, "").json(t)["data"].([]any); len(r) != 0 {
		t.Fatalf("another merchant's operator sees %d dead letters, want 0", len(r))
	}
}

func containsLine(text, line string) bool {
	for _, l := range splitLines(text) {
		if l == line {
			return true
		}
	}
	return false
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
