package reconcile_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"golang.org/x/time/rate"

	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/retry"
)

// accountAnswer is one answer of scriptedAccounts.
type accountAnswer struct {
	id  string
	err error
}

// scriptedAccounts answers Confirm with its answers in order, the last one from then on.
type scriptedAccounts struct {
	mu      sync.Mutex
	answers []accountAnswer
	calls   int
}

func (a *scriptedAccounts) Confirm(context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ans := a.answers[min(a.calls, len(a.answers)-1)]
	a.calls++
	return ans.id, ans.err
}

// countingReplayer notes the replays it was asked to send.
type countingReplayer struct {
	mu sync.Mutex
	n  int
}

func (r *countingReplayer) Replay(context.Context, string) processor.Attempt {
	r.mu.Lock()
	r.n++
	r.mu.Unlock()
	return processor.Attempt{Outcome: retry.Outcome{Class: retry.ClassSuccess, HTTPStatus: 200}, PaymentIntent: "pi_replayed", Status: "succeeded"}
}

// The reconciler reads only at the account the processor confirms now, which may not be the
// one it started with: a charge of another account goes to review without a read; a check
// whose account cannot be confirmed, or changes while it runs, records nothing.
func TestReconcileConfirmsTheAccount(t *testing.T) {
	t.Parallel()
	unreachable := accountAnswer{err: errors.New("connection refused")}
	for _, tc := range []struct {
		name        string
		answers     []accountAnswer
		withRef     bool
		replayer    bool
		wantErr     bool
		wantReads   bool
		wantReplays int
		wantReason  reconcile.Reason
		wantOutcome reconcile.Outcome
	}{
		{"the charge's account", []accountAnswer{{id: simAccount}}, true, false, false, true, 0, "", reconcile.OutcomeSucceeded},
		{"the charge's account, replayed", []accountAnswer{{id: simAccount}}, false, true, false, true, 1, "", reconcile.OutcomeSucceeded},
		{"another account now", []accountAnswer{{id: "acct_other"}}, true, true, false, false, 0, reconcile.ReasonOtherAccount, ""},
		{"the account cannot be read", []accountAnswer{unreachable}, true, false, true, false, 0, "", ""},
		{"another account after the reads", []accountAnswer{{id: simAccount}, {id: "acct_other"}}, true, false, true, true, 0, "", ""},
		{"unreadable after the reads", []accountAnswer{{id: simAccount}, unreachable}, true, false, true, true, 0, "", ""},
		{"another account before the replay", []accountAnswer{{id: simAccount}, {id: "acct_other"}}, false, true, true, true, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := newMemStore()
			reads := &countingReads{Reads: fakeReads{}}
			replays := &countingReplayer{}
			cfg := reconcile.Config{Accounts: &scriptedAccounts{answers: tc.answers}, Reads: reads, Store: store,
				Now:         func() time.Time { return time.Date(2031, 1, 1, 0, 1, 0, 0, time.UTC) },
				ReadLimiter: rate.NewLimiter(rate.Inf, 1), SearchLimiter: rate.NewLimiter(rate.Inf, 1),
				Log: zaptest.NewLogger(t)}
			if tc.replayer {
				cfg.Replayer = replays
			}
			rec, err := reconcile.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			c := fakeCharge(1, tc.withRef)
			chk, err := rec.Reconcile(context.Background(), c)
			if tc.wantErr {
				if !errors.Is(err, processor.ErrAccountUnconfirmed) {
					t.Fatalf("Reconcile: got %v, want ErrAccountUnconfirmed", err)
				}
				if n := len(store.checksOf(c.ID)); n != 0 {
					t.Fatalf("checks recorded: got %d, want none", n)
				}
			} else if err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			if got := reads.calls.Load() > 0; got != tc.wantReads {
				t.Fatalf("reads made: got %d, want reads %v", reads.calls.Load(), tc.wantReads)
			}
			if replays.n != tc.wantReplays {
				t.Fatalf("replays sent: got %d, want %d", replays.n, tc.wantReplays)
			}
			if tc.wantErr {
				return
			}
			d := chk.Decision
			if d.Reason != tc.wantReason || d.Outcome != tc.wantOutcome {
				t.Fatalf("decision: got %s %s %s, want reason %q outcome %q", d.Kind, d.Reason, d.Outcome, tc.wantReason, tc.wantOutcome)
			}
			if want := tc.answers[0].id; chk.Evidence.Account != want {
				t.Fatalf("evidence account: got %q, want %q", chk.Evidence.Account, want)
			}
		})
	}
}

// A Reconciler needs an account: fixed, or confirmed through Accounts.
func TestReconcileAccountsAlone(t *testing.T) {
	t.Parallel()
	if _, err := reconcile.New(reconcile.Config{Accounts: &scriptedAccounts{answers: []accountAnswer{{id: simAccount}}},
		Reads: fakeReads{}, Store: newMemStore()}); err != nil {
		t.Fatalf("New with Accounts and no Account: %v", err)
	}
}
