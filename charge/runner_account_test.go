package charge

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/retry"
)

// switchingAccounts is an Accounts whose account the test changes; err makes every read fail.
type switchingAccounts struct {
	mu       sync.Mutex
	account  string
	err      error
	confirms int
}

func (a *switchingAccounts) set(account string, err error) {
	a.mu.Lock()
	a.account, a.err = account, err
	a.mu.Unlock()
}

func (a *switchingAccounts) Current(context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return "", a.err
	}
	return a.account, nil
}

func (a *switchingAccounts) Confirm(ctx context.Context) (string, error) {
	a.mu.Lock()
	a.confirms++
	a.mu.Unlock()
	return a.Current(ctx)
}

func (a *switchingAccounts) Refresh(ctx context.Context) (string, error) { return a.Confirm(ctx) }

func (a *switchingAccounts) Last() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.account
}

// countingProcessor is a scriptedProcessor that counts what it was sent, and may run a hook
// after each attempt (the processor changes account meanwhile).
type countingProcessor struct {
	scriptedProcessor
	sent  int
	after func(n int)
}

func (p *countingProcessor) CreatePayment(ctx context.Context, params processor.PaymentParams) processor.Attempt {
	p.sent++
	a := p.scriptedProcessor.CreatePayment(ctx, params)
	if p.after != nil {
		p.after(p.sent)
	}
	return a
}

func accountCharge() *Charge {
	return &Charge{ID: "ch_acct", MerchantID: "m", Amount: 100, Currency: "usd", PaymentMethod: "pm_card_visa",
		ProcessorKey: ProcessorKey("ch_acct"), ProcessorAccount: "acct_A"}
}

// The runner sends nothing for a charge unless the processor's account is the charge's,
// before every attempt: a charge of another account fails for good, or stays pending when an
// earlier attempt may have executed; an account that cannot be read sends nothing and fails
// retryably.
func TestRunnerSendsOnlyToTheChargesAccount(t *testing.T) {
	t.Parallel()
	policy := retry.DefaultPolicy()
	policy.Base, policy.Cap = time.Millisecond, 5*time.Millisecond

	for _, tc := range []struct {
		name          string
		script        []retry.Outcome
		switchAfter   int // the processor becomes acct_B after this many sends (0: before the first)
		unreadable    bool
		wantSent      int
		wantStatus    Status
		wantFailure   string
		wantRetryable bool
		wantLastClass retry.Class
	}{
		{"same account", []retry.Outcome{{Class: retry.ClassSuccess, HTTPStatus: 200}}, -1, false,
			1, StatusSucceeded, "", false, retry.ClassSuccess},
		{"another account before the first attempt", nil, 0, false,
			0, StatusFailed, CodeAccountChanged, false, retry.ClassNotSent},
		{"another account after a refused attempt", []retry.Outcome{{Class: retry.ClassNotSent, ProcessorCode: "connection_refused"}}, 1, false,
			1, StatusFailed, CodeAccountChanged, false, retry.ClassNotSent},
		{"another account after an attempt that may have executed", []retry.Outcome{{Class: retry.ClassOutcomeUnknown, MaybeExecuted: true}}, 1, false,
			1, StatusPending, "", false, retry.ClassNotSent},
		{"the account cannot be read", nil, -1, true,
			0, StatusFailed, "", true, retry.ClassNotSent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			accounts := &switchingAccounts{account: "acct_A"}
			if tc.switchAfter == 0 {
				accounts.set("acct_B", nil)
			}
			if tc.unreadable {
				accounts.set("acct_A", errors.New("connection refused"))
			}
			proc := &countingProcessor{scriptedProcessor: scriptedProcessor{script: tc.script}}
			proc.after = func(n int) {
				if n == tc.switchAfter {
					accounts.set("acct_B", nil)
				}
			}
			r := NewRunner(RunnerConfig{Processor: proc, Accounts: accounts, Policy: policy})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			out := r.Run(ctx, accountCharge())
			if proc.sent != tc.wantSent {
				t.Fatalf("attempts sent: got %d, want %d", proc.sent, tc.wantSent)
			}
			if out.Status != tc.wantStatus {
				t.Fatalf("status: got %s %+v, want %s", out.Status, out.Failure, tc.wantStatus)
			}
			if tc.wantStatus == StatusFailed {
				if out.Failure == nil || out.Failure.Retryable != tc.wantRetryable ||
					(tc.wantFailure != "" && out.Failure.Code != tc.wantFailure) {
					t.Fatalf("failure: got %+v, want %q retryable=%v", out.Failure, tc.wantFailure, tc.wantRetryable)
				}
			}
			last := out.Attempts[len(out.Attempts)-1]
			if last.Class != string(tc.wantLastClass) {
				t.Fatalf("last attempt: got class %s (%s), want %s", last.Class, last.ProcessorCode, tc.wantLastClass)
			}
		})
	}
}

// fixedRunner is a Runner without AccountConfirmer: the engine falls back to its fixed account.
type fixedRunner struct{ account string }

func (r fixedRunner) Account() string                      { return r.account }
func (r fixedRunner) Run(context.Context, *Charge) Outcome { return Outcome{} }

// The engine confirms the account of a charge it did not just create (a retry, a resumed run),
// and trusts the current account for the one it just created.
func TestServiceConfirmsTheAccountOfAnExistingCharge(t *testing.T) {
	t.Parallel()
	now := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		createdAt   time.Time
		uncertain   bool
		current     string
		wantMoved   bool
		wantConfirm int
	}{
		{"just created, same account", now, false, "acct_A", false, 0},
		{"just created, the watch moved meanwhile", now, false, "acct_B", true, 0},
		{"a retry", now.Add(-time.Minute), false, "acct_B", true, 1},
		{"a resumed run", now, true, "acct_B", true, 1},
		{"a retry, same account", now.Add(-time.Minute), false, "acct_A", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			accounts := &switchingAccounts{account: tc.current}
			s := NewService(ServiceConfig{Runner: NewRunner(RunnerConfig{Accounts: accounts})})
			c := accountCharge()
			c.CreatedAt = tc.createdAt
			if got := s.carriedAccountMoved(context.Background(), c, now, tc.uncertain); got != tc.wantMoved {
				t.Fatalf("moved: got %v, want %v", got, tc.wantMoved)
			}
			if accounts.confirms != tc.wantConfirm {
				t.Fatalf("confirmations: got %d, want %d", accounts.confirms, tc.wantConfirm)
			}
		})
	}

	t.Run("an account that cannot be confirmed is not moved", func(t *testing.T) {
		t.Parallel()
		accounts := &switchingAccounts{account: "acct_A", err: errors.New("connection refused")}
		s := NewService(ServiceConfig{Runner: NewRunner(RunnerConfig{Accounts: accounts})})
		c := accountCharge()
		c.CreatedAt = now.Add(-time.Minute)
		if s.carriedAccountMoved(context.Background(), c, now, false) {
			t.Fatal("moved: got true for an account nobody could read, want false (the runner sends nothing)")
		}
	})

	t.Run("a runner with a fixed account", func(t *testing.T) {
		t.Parallel()
		s := NewService(ServiceConfig{Runner: fixedRunner{account: "acct_B"}})
		c := accountCharge()
		c.CreatedAt = now.Add(-time.Minute)
		if !s.carriedAccountMoved(context.Background(), c, now, false) || s.accountNow(context.Background()) != "acct_B" {
			t.Fatal("a fixed-account runner: want its account compared as before")
		}
	})
}

// freshProcessor answers every attempt with success over a newly dialed connection, after
// which the process behind the address is another account: it was restarted as one between
// the account's last read and the send, with no request failing.
type freshProcessor struct{ accounts *switchingAccounts }

func (p freshProcessor) CreatePayment(context.Context, processor.PaymentParams) processor.Attempt {
	p.accounts.set("acct_B", nil)
	return processor.Attempt{Outcome: retry.Outcome{Class: retry.ClassSuccess, HTTPStatus: 200}, Writes: 1, FreshConn: true}
}

// A run whose first send went over a new connection to a processor that turns out to be
// another account records the charge where its key was used; a charge sent before, or a send
// over a reused connection, is not moved.
func TestRunnerRecordsTheAccountItReached(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		attempts    int
		wantAccount string
	}{
		{"a charge's first sends", 0, "acct_B"},
		{"a charge sent before", 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			accounts := &switchingAccounts{account: "acct_A"}
			r := NewRunner(RunnerConfig{Processor: freshProcessor{accounts}, Accounts: accounts, Policy: retry.DefaultPolicy()})
			c := accountCharge()
			c.Attempts = tc.attempts
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			out := r.Run(ctx, c)
			if out.Status != StatusSucceeded || out.Account != tc.wantAccount {
				t.Fatalf("got %s at %q, want succeeded at %q", out.Status, out.Account, tc.wantAccount)
			}
		})
	}
}
