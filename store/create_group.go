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
	"github.com/paygate/paygate/idempotency"
)

// createGroupLocksSQL takes the locks of a group's cards, in the order of their hashes, so
// that two groups that share cards cannot wait for each other. It also has createGroupSQL,
// next in the transaction, run its generic plan: the plan of a statement over arrays whose
// lengths only an execution knows would otherwise look costlier than a plan made for each
// execution, and every group would be planned again.
const createGroupLocksSQL = `
	SELECT set_config('plan_cache_mode', 'force_generic_plan', true), count(pg_advisory_xact_lock(h)) FROM (
		SELECT DISTINCT hashtextextended(a || '/' || f, 7263) AS h FROM unnest($1::text[], $2::text[]) AS u(a, f)
		 ORDER BY h
	) AS l`

// createGroupSQL is createSQL for a group: it writes each key with its charge, on the
// database clock, and returns the id and creation of each charge written. A member whose card
// has a refusal on record, whose key exists or whose reference is live writes nothing (it
// then reads its snapshot, as after createSQL). A key or a reference that a transaction not
// committed yet holds, or that two members share, makes the statement fail on a unique
// index: the group's members are then created one by one.
const createGroupSQL = `
	WITH v AS (
		SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::text[], $5::interval[], $6::text[], $7::text[],
			$8::bigint[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[],
			$16::text[], $17::int[], $18::int[])
		  AS v(merchant_id, key, fingerprint, id, lock_for, account, card, amount, currency, payment_method, customer,
			reference, initiator, mode, metadata, network, exp_month, exp_year)
	),
	k AS (
		INSERT INTO idempotency_keys (merchant_id, key, fingerprint, charge_id, locked_until, created_at)
		SELECT v.merchant_id, v.key, v.fingerprint, v.id, clock_timestamp() + v.lock_for, clock_timestamp() FROM v
		 WHERE NOT EXISTS (SELECT 1 FROM card_states s WHERE s.processor_account = v.account AND s.fingerprint = v.card)
		   AND NOT EXISTS (SELECT 1 FROM idempotency_keys e WHERE e.merchant_id = v.merchant_id AND e.key = v.key)
		   AND (v.reference = '' OR NOT EXISTS (SELECT 1 FROM charges c WHERE c.merchant_id = v.merchant_id
		        AND c.reference = v.reference AND c.reference_duplicate_of IS NULL AND c.live))
		 ORDER BY v.merchant_id, v.key
		RETURNING charge_id, created_at
	)
	INSERT INTO charges (id, merchant_id, amount, currency, payment_method, customer, reference, initiator,
		reattempt_mode, metadata, status, processor_account, card_fingerprint, card_network, card_exp_month,
		card_exp_year, idempotency_key, card_at, card_outcome, created_at, updated_at, live)
	SELECT v.id, v.merchant_id, v.amount, v.currency, v.payment_method, NULLIF(v.customer, ''), NULLIF(v.reference, ''),
		v.initiator, v.mode, v.metadata::jsonb, 'processing', NULLIF(v.account, ''), v.card, NULLIF(v.network, ''),
		NULLIF(v.exp_month, 0), NULLIF(v.exp_year, 0), v.key, k.created_at, 'pending', k.created_at, k.created_at, true
	  FROM k JOIN v ON v.id = k.charge_id
	RETURNING id, created_at`

// creating is a create run by the grouper.
type creating struct {
	ctx  context.Context
	cr   charge.Creation
	meta []byte
	done chan created     // buffered: the group's leader never waits for the caller
	next chan []*creating // the group the create leads
}

// creatingPool keeps the creates whose result was received, for the next ones.
var creatingPool = sync.Pool{New: func() any {
	return &creating{done: make(chan created, 1), next: make(chan []*creating, 1)}
}}

// release returns w to creatingPool; its group has answered it, or it never ran.
func (w *creating) release() {
	*w = creating{done: w.done, next: w.next}
	creatingPool.Put(w)
}

// created is a create's result.
type created struct {
	at  time.Time
	err error
}

// Create implements charge.Store: the charge is written with the creates that wait with it,
// or alone (createOne) when none does.
func (db *DB) Create(ctx context.Context, cr charge.Creation) (time.Time, error) {
	meta, err := metadataJSON(cr.Charge.Metadata)
	if err != nil {
		return time.Time{}, err
	}
	if db.creates == nil {
		return db.createOne(ctx, cr, meta)
	}
	w := creatingPool.Get().(*creating)
	w.ctx, w.cr, w.meta = ctx, cr, meta
	if ran, err := db.creates.do(ctx, w); err != nil || !ran {
		w.release()
		if err != nil {
			return time.Time{}, err
		}
		return db.createOne(ctx, cr, meta)
	}
	select {
	case r := <-w.done:
		w.release()
		return r.at, r.err
	case <-ctx.Done():
		// As when a lone create is cancelled: whether the charge was written is unknown
		// to the caller; its key answers a retry. A member whose statement was refused runs
		// alone after its group, and may still answer w.
		return time.Time{}, ctx.Err()
	}
}

// createGroup writes a group and gives each member its result. A statement the database
// refused rolled the whole group back: its members are then created one by one, each with
// the result a lone create has. Any other failure leaves the group's commit unknown, and
// each member gets the error, as a lone create would.
func (db *DB) createGroup(group []*creating) {
	runGroup(group, db.createAlone, func(ctx context.Context, live []*creating) {
		ats, err := db.createMany(ctx, live)
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr):
			for _, w := range live {
				go db.createAlone(w)
			}
		case err != nil:
			err = fmt.Errorf("store: create charge: %w", interpretError(err))
			for _, w := range live {
				w.fail(err)
			}
		default:
			for _, w := range live {
				at, ok := ats[w.cr.Charge.ID]
				if !ok {
					w.fail(charge.ErrNotApplied)
					continue
				}
				w.done <- created{at: at}
			}
		}
	})
}

// createAlone creates w's charge alone and gives w the result.
func (db *DB) createAlone(w *creating) {
	at, err := db.createOne(w.ctx, w.cr, w.meta)
	w.done <- created{at: at, err: err}
}

func (w *creating) callCtx() context.Context { return w.ctx }
func (w *creating) fail(err error)           { w.done <- created{err: err} }
func (w *creating) turn() chan []*creating   { return w.next }

// createMany runs createGroupLocksSQL and createGroupSQL as one transaction and returns the
// creation of each charge it wrote, by id.
func (db *DB) createMany(ctx context.Context, group []*creating) (map[string]time.Time, error) {
	n := len(group)
	var (
		merchants, keys, ids, accounts, cards = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		currencies, methods, customers        = make([]string, n), make([]string, n), make([]string, n)
		references, initiators, modes, metas  = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		networks                              = make([]string, n)
		fingerprints                          = make([][]byte, n)
		locks                                 = make([]time.Duration, n)
		amounts                               = make([]int64, n)
		months, years                         = make([]int32, n), make([]int32, n)
	)
	for i, w := range group {
		c := w.cr.Charge
		merchants[i], keys[i], ids[i], accounts[i] = c.MerchantID, w.cr.Key, c.ID, c.ProcessorAccount
		fingerprints[i], locks[i] = w.cr.Fingerprint[:idempotency.MatchedLen], w.cr.LockFor
		cards[i], networks[i] = c.Card.Fingerprint, c.Card.Network
		months[i], years[i] = int32(c.Card.ExpMonth), int32(c.Card.ExpYear)
		amounts[i], currencies[i], methods[i], customers[i] = c.Amount, c.Currency, c.PaymentMethod, c.Customer
		references[i], initiators[i], modes[i], metas[i] = c.Reference, string(c.Initiator), string(c.ReattemptMode), string(w.meta)
	}
	tx, err := db.pipeline(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.close(ctx)
	b := &pgx.Batch{}
	b.Queue(createGroupLocksSQL, accounts, cards)
	b.Queue(createGroupSQL, merchants, keys, fingerprints, ids, locks, accounts, cards, amounts, currencies, methods,
		customers, references, initiators, modes, metas, networks, months, years)
	ats := make(map[string]time.Time, n)
	err = tx.send(ctx, b, true, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		var (
			id string
			at time.Time
		)
		_, err = pgx.ForEachRow(rows, []any{&id, &at}, func() error {
			ats[id] = at
			return nil
		})
		return err
	})
	return ats, err
}
