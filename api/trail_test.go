package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/apikey"
	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/reconcile"
)

// TestTrailByRole: a checkout key reads its charge's state changes in events — when, what,
// why, before and after, and the kind of actor — but not the operators' notes and key ids,
// nor the processor evidence (of the events and of the reconciliation checks); operators and
// auditors read all of it.
func TestTrailByRole(t *testing.T) {
	t.Parallel()
	s := setup(t, nil)
	at := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	s.review.events = []charge.Event{
		{At: at, Actor: "gateway", Action: "outcome", StatusBefore: "processing", StatusAfter: "pending"},
		{At: at, Actor: "reconciler", Action: "review", Reason: "window_exhausted", StatusBefore: "pending", StatusAfter: "pending",
			Evidence: json.RawMessage(`{"list":{"found":0,"secret_evidence":true}}`)},
		{At: at, Actor: "operator:key_8f3a", Action: "manual_resolution", StatusBefore: "pending", StatusAfter: "failed",
			Note: "customer called: order abandoned", Evidence: json.RawMessage(`{"secret_evidence":true}`)},
	}
	s.review.rec = &reconcile.State{InReview: false, ManualOutcome: "failed",
		Checks: []json.RawMessage{json.RawMessage(`{"n":1,"evidence":{"secret_evidence":true}}`)}}
	for _, tc := range []struct {
		role apikey.Role
		full bool
	}{{apikey.RoleCheckout, false}, {apikey.RoleOperator, true}, {apikey.RoleAuditor, true}} {
		rec := s.do(t, http.MethodGet, "/v1/charges/ch_known", tc.role, "")
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: got %d %s", tc.role, rec.Code, rec.Body)
		}
		body := rec.Body.String()
		for _, private := range []string{"key_8f3a", "order abandoned", "secret_evidence"} {
			if got := strings.Contains(body, private); got != tc.full {
				t.Errorf("%s: the body holds %q: %v, want %v: %s", tc.role, private, got, tc.full, body)
			}
		}
		var v struct {
			Events []map[string]any `json:"events"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || len(v.Events) != 3 {
			t.Fatalf("%s: got events %v (%v), want the three", tc.role, v.Events, err)
		}
		manual := v.Events[2]
		wantActor := "operator:key_8f3a"
		if !tc.full {
			wantActor = "operator"
		}
		if manual["actor"] != wantActor || manual["action"] != "manual_resolution" || manual["status_before"] != "pending" ||
			manual["status_after"] != "failed" || v.Events[1]["reason"] != "window_exhausted" {
			t.Errorf("%s: got events %v, want the state changes with actor %q", tc.role, v.Events, wantActor)
		}
	}
}
