package charge

import (
	"context"
	"time"
)

// AccountConfirmer is a Runner that reads the processor account as the processor states it
// now, rather than as it was configured (*LoopRunner): the processor behind the configured
// API base may change account while paygate runs. The engine records a new charge at
// CurrentAccount, and asks AccountMoved before it sends anything under an existing charge's
// key. A Runner without it has the fixed account Runner.Account.
type AccountConfirmer interface {
	// CurrentAccount returns the account a new charge is recorded at: the one the processor
	// stated last, read again first when a failed connection put it in doubt.
	CurrentAccount(ctx context.Context) string
	// AccountMoved reports whether the processor, asked now (or within the last seconds),
	// states another account than account. It reports false when it cannot tell: Run then
	// sends nothing for a charge of account until the account is confirmed.
	AccountMoved(ctx context.Context, account string) bool
}

// accountNow returns the processor account a new charge is recorded at.
func (s *Service) accountNow(ctx context.Context) string {
	if a, ok := s.runner.(AccountConfirmer); ok {
		return a.CurrentAccount(ctx)
	}
	return s.runner.Account()
}

// accountMoved reports whether the processor account the engine talks to is, confirmed now,
// another than account, the one a charge was recorded at (false for a charge recorded
// without one).
func (s *Service) accountMoved(ctx context.Context, account string) bool {
	if account == "" {
		return false
	}
	if a, ok := s.runner.(AccountConfirmer); ok {
		return a.AccountMoved(ctx, account)
	}
	return account != s.runner.Account()
}

// carriedAccountMoved reports, before carry sends anything, whether the processor is now
// another account than the one charge c was recorded at. A charge of an earlier request — a
// retry, or a run resumed (uncertain) — is confirmed with the processor now. A charge this
// request has just created (its creation time is the first phase's clock, now) was recorded
// at the current account a moment ago: the runner's check before each attempt covers it,
// without a read of its own.
func (s *Service) carriedAccountMoved(ctx context.Context, c *Charge, now time.Time, uncertain bool) bool {
	if !uncertain && c.CreatedAt.Equal(now) {
		return c.ProcessorAccount != "" && c.ProcessorAccount != s.accountNow(ctx)
	}
	return s.accountMoved(ctx, c.ProcessorAccount)
}
