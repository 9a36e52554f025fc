package reconcile

import "testing"

func TestCheckLooked(t *testing.T) {
	t.Parallel()
	failed := &ReadFailure{Code: "connection_refused"}
	for _, tc := range []struct {
		name string
		chk  Check
		want bool
	}{
		{"no read made", Check{}, false},
		{"every read failed", Check{Evidence: Evidence{Retrieve: &Retrieval{ID: "pi_1", Failure: failed},
			List: &Listing{Failure: failed}, Search: &Search{Failure: failed}}}, false},
		{"retrieve answered not found", Check{Evidence: Evidence{Retrieve: &Retrieval{ID: "pi_1", NotFound: true}}}, true},
		{"a list page read before a failure", Check{Evidence: Evidence{List: &Listing{Pages: 1, Failure: failed}}}, true},
		{"an empty complete list", Check{Evidence: Evidence{List: &Listing{Complete: true}}}, true},
		{"search answered", Check{Evidence: Evidence{Search: &Search{Answered: true, MayLag: true}}}, true},
		{"replay answered", Check{Evidence: Evidence{Replay: &ReplayAnswer{HTTPStatus: 503}}}, true},
		{"replay unanswered", Check{Evidence: Evidence{Replay: &ReplayAnswer{}}}, false},
		{"another account", Check{Decision: Decision{Kind: KindReview, Reason: ReasonOtherAccount}}, true},
	} {
		if got := tc.chk.Looked(); got != tc.want {
			t.Errorf("%s: Looked() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
