package store

import (
	"time"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
)

// FinishStatement exposes finishStatement to the tests.
func FinishStatement(p charge.FinishParams) (string, []any, error) {
	return finishStatement(p, time.Minute)
}

// CreateStatement exposes the statement planCreation writes for a new charge, in each mode
// (CreationModes of them).
func CreateStatement(p charge.BeginParams, mode int) (string, []any, error) {
	plan, err := planCreation(p, time.Now(), decline.History{}, creationMode(mode), &charge.Begun{})
	if err != nil {
		return "", nil, err
	}
	st := plan.stmts[len(plan.stmts)-1]
	return st.sql, st.args, nil
}

// Positional exposes positional to the tests.
var Positional = positional

// CreationModes is how many creation modes there are.
const CreationModes = int(creationClean) + 1
