package reconcile

import (
	"context"
	"errors"
	"fmt"

	"github.com/paygate/paygate/processor"
)

// Accounts confirms the processor account Reads talk to (a *processor.AccountWatch). A
// Reconciler records nothing when the account cannot be confirmed before the reads, or
// before the decision (or is another one by then): evidence is only ever recorded against
// the account it was read from. The
// processor behind the configured API base may change account while paygate runs: a charge
// read at another account than its own would be "not found" there.
type Accounts interface {
	// Confirm returns the account as the processor states it now (a new read unless one
	// succeeded within a few seconds); an error when it cannot be read.
	Confirm(ctx context.Context) (string, error)
}

// fixedAccount is the Accounts of a Reconciler configured with one account id.
type fixedAccount string

func (a fixedAccount) Confirm(context.Context) (string, error) { return string(a), nil }

// confirm returns the account the processor states now, or an error wrapping
// processor.ErrAccountUnconfirmed.
func (r *Reconciler) confirm(ctx context.Context) (string, error) {
	id, err := r.accounts.Confirm(ctx)
	switch {
	case errors.Is(err, processor.ErrAccountUnconfirmed):
		return "", err
	case err != nil:
		return "", fmt.Errorf("%w: %w", processor.ErrAccountUnconfirmed, err)
	case id == "":
		return "", fmt.Errorf("%w: no account id", processor.ErrAccountUnconfirmed)
	}
	return id, nil
}
