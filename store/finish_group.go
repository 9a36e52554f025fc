package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paygate/paygate/charge"
)

// genericPlanSQL has the next statement of its transaction run its generic plan: the plan of
// a statement over arrays whose lengths only an execution knows would otherwise look
// costlier than a plan made for each execution, and every group would be planned again.
const genericPlanSQL = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`

// finishFirstGroupSQL is finishFirstSQL for a group of plain approvals: one row of each
// array per charge. It updates the charges whose conditions hold, as finishFirstSQL does
// for one, and returns their ids; the caller stores the others' outcomes by the general
// statements.
const finishFirstGroupSQL = finishFirstSetSQL + `unnest($1::text[], $2::text[], $3::text[], $4::bool[], $5::text[],
		$6::text[], $7::int[], $8::text[], $9::timestamptz[], $10::int[], $11::bytea[], $12::text[])
		AS v(id, merchant_id, status, live, ref, account, logged, log, first_sent, answer_status, answer, reason)` +
	finishFirstWhereSQL + `
	RETURNING c.id`

// finishing is a plain approval run by the grouper.
type finishing struct {
	ctx  context.Context
	p    charge.FinishParams
	v    finishValues
	done chan finished     // buffered: the group's leader never waits for the caller
	next chan []*finishing // the group the approval leads
}

// finishingPool keeps the approvals whose result was received, for the next ones.
var finishingPool = sync.Pool{New: func() any {
	return &finishing{done: make(chan finished, 1), next: make(chan []*finishing, 1)}
}}

// release returns w to finishingPool; its group has answered it, or it never ran.
func (w *finishing) release() {
	*w = finishing{done: w.done, next: w.next}
	finishingPool.Put(w)
}

// finished is what a group did with a plain approval.
type finished struct {
	applied bool  // the charge's row holds the outcome
	alone   bool  // the group was refused: the caller stores the outcome alone, from the start
	err     error // whether the outcome was stored is unknown
}

// finishFirst stores a plain approval (firstOutcome) with those that wait with it, or alone
// on q when none does (or when the store runs inside a test transaction). It reports
// whether the charge's row now holds it; when it does not, the charge had moved on (another
// outcome, a card state that folded its attempt) and the caller stores the outcome by the
// general statements.
func (db *DB) finishFirst(ctx context.Context, q querier, p charge.FinishParams, v finishValues) (bool, error) {
	if db.finishes != nil {
		w := finishingPool.Get().(*finishing)
		w.ctx, w.p, w.v = ctx, p, v
		ran, err := db.finishes.do(ctx, w)
		if err != nil || !ran {
			w.release()
		}
		if err != nil {
			return false, err
		}
		if ran {
			select {
			case r := <-w.done:
				w.release()
				if !r.alone {
					return r.applied, r.err
				}
			case <-ctx.Done():
				// As when a lone finish is cancelled: whether the outcome was stored is
				// unknown to the caller.
				return false, ctx.Err()
			}
		}
	}
	return finishFirstAlone(ctx, q, p, v)
}

// finishFirstAlone runs finishFirstSQL for one charge on q.
func finishFirstAlone(ctx context.Context, q querier, p charge.FinishParams, v finishValues) (bool, error) {
	tag, err := q.Exec(ctx, finishFirstSQL, firstArgs(p, v)...)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// finishGroup stores a group's plain approvals and tells each member what became of its
// own. A statement the database refused rolled the whole group back: its members then
// store their outcomes alone. Any other failure leaves the group's commit unknown, and each
// member gets the error, as a lone finish would.
func (db *DB) finishGroup(group []*finishing) {
	runGroup(group, func(w *finishing) {
		applied, err := finishFirstAlone(w.ctx, db.pool, w.p, w.v)
		w.done <- finished{applied: applied, err: err}
	}, func(ctx context.Context, live []*finishing) {
		applied, err := db.finishMany(ctx, live)
		var pgErr *pgconn.PgError
		for _, w := range live {
			switch {
			case errors.As(err, &pgErr):
				w.done <- finished{alone: true}
			case err != nil:
				w.fail(err)
			default:
				_, ok := applied[w.p.Charge.ID]
				w.done <- finished{applied: ok}
			}
		}
	})
}

func (w *finishing) callCtx() context.Context { return w.ctx }
func (w *finishing) fail(err error)           { w.done <- finished{err: err} }
func (w *finishing) turn() chan []*finishing  { return w.next }

// finishMany runs finishFirstGroupSQL for group as one transaction and returns the ids of
// the charges it updated.
func (db *DB) finishMany(ctx context.Context, group []*finishing) (map[string]struct{}, error) {
	n := len(group)
	var (
		ids, merchants, statuses, refs, accounts, reasons = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		lives                                             = make([]bool, n)
		logged                                            = make([]int32, n)
		logs                                              = make([]*string, n)
		firstSent                                         = make([]*time.Time, n)
		answerStatus                                      = make([]*int32, n)
		answers                                           = make([][]byte, n)
	)
	for i, w := range group {
		c, v := w.p.Charge, w.v
		ids[i], merchants[i], statuses[i], lives[i] = c.ID, c.MerchantID, string(c.Status), c.Status.Live()
		refs[i], accounts[i], reasons[i] = c.ProcessorRef, c.ProcessorAccount, w.p.Reason
		logged[i], firstSent[i], answers[i] = int32(v.attemptsLogged), v.firstSent, v.body
		if v.attempts != nil {
			s := string(v.attempts)
			logs[i] = &s
		}
		if v.status != nil {
			s := int32(*v.status)
			answerStatus[i] = &s
		}
	}
	tx, err := db.pipeline(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.close(ctx)
	b := &pgx.Batch{}
	b.Queue(genericPlanSQL)
	b.Queue(finishFirstGroupSQL, ids, merchants, statuses, lives, refs, accounts, logged, logs, firstSent, answerStatus,
		answers, reasons)
	applied := make(map[string]struct{}, n)
	err = tx.send(ctx, b, true, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		var id string
		_, err = pgx.ForEachRow(rows, []any{&id}, func() error {
			applied[id] = struct{}{}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: finish charges: %w", err)
	}
	return applied, nil
}
