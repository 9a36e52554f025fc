package store

import (
	"context"
	"fmt"
	"time"

	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/report"
)

var _ report.Store = (*DB)(nil)

// ReattemptCards implements report.Store in one statement, so that the histories and
// the refusals come from one snapshot.
//
// The cards are those with an attempt or a reattempt decision in [q.From, q.To] (by
// q.Merchant when set) at a processor account. For each, every merchant's attempts from
// q.Since() to q.To are read, with the two older ones that can still change the report:
// the last authorization (not a processor block) and the first never-class decline or
// block. Merchants and refusals are those of the period, for every merchant.
func (db *DB) ReattemptCards(ctx context.Context, q report.Query) ([]report.Card, error) {
	rows, err := db.pool.Query(ctx, `
		WITH cards AS (
			SELECT processor_account, fingerprint FROM card_attempts
			 WHERE at >= $1 AND at <= $2 AND ($3 = '' OR merchant_id = $3)
			UNION
			SELECT processor_account, fingerprint FROM reattempt_decisions
			 WHERE at >= $1 AND at <= $2 AND ($3 = '' OR merchant_id = $3)
		),
		involved AS (
			SELECT a.processor_account, a.fingerprint, a.merchant_id, a.network, false AS refused
			  FROM card_attempts a JOIN cards USING (processor_account, fingerprint)
			 WHERE a.at >= $1 AND a.at <= $2
			UNION ALL
			SELECT d.processor_account, d.fingerprint, d.merchant_id, d.network, NOT d.allowed
			  FROM reattempt_decisions d JOIN cards USING (processor_account, fingerprint)
			 WHERE d.at >= $1 AND d.at <= $2
		),
		summary AS (
			SELECT processor_account, fingerprint, max(network) AS network,
				array_agg(DISTINCT merchant_id ORDER BY merchant_id) AS merchants,
				count(*) FILTER (WHERE refused) AS refused
			  FROM involved GROUP BY processor_account, fingerprint
		),
		history AS (
			SELECT a.* FROM card_attempts a JOIN cards USING (processor_account, fingerprint)
			 WHERE a.at >= $4 AND a.at <= $2
			UNION
			(SELECT DISTINCT ON (a.processor_account, a.fingerprint) a.*
			   FROM card_attempts a JOIN cards USING (processor_account, fingerprint)
			  WHERE a.at < $4 AND a.outcome <> 'blocked'
			  ORDER BY a.processor_account, a.fingerprint, a.at DESC, a.charge_id DESC)
			UNION
			(SELECT DISTINCT ON (a.processor_account, a.fingerprint) a.*
			   FROM card_attempts a JOIN cards USING (processor_account, fingerprint)
			  WHERE a.at < $4 AND a.class = 'never' AND a.outcome IN ('declined', 'blocked')
			  ORDER BY a.processor_account, a.fingerprint, a.at, a.charge_id)
		)
		SELECT s.processor_account, s.fingerprint, s.network, s.merchants, s.refused,
			h.charge_id, h.chain, h.at, h.outcome, COALESCE(h.class, ''), h.network, COALESCE(h.category, 0),
			COALESCE(h.mac, 0), COALESCE(h.exp_month, 0), COALESCE(h.exp_year, 0), h.cap_reached, h.settled_at,
			COALESCE(h.hold, ''), COALESCE(h.payment_method, ''), COALESCE(h.currency, '')
		  FROM summary s LEFT JOIN history h USING (processor_account, fingerprint)
		 ORDER BY s.processor_account, s.fingerprint, h.at, h.charge_id`,
		q.From, q.To, q.Merchant, q.Since())
	if err != nil {
		return nil, fmt.Errorf("store: reattempt report: %w", err)
	}
	defer rows.Close()
	var (
		cards []report.Card
		cur   *report.Card
	)
	for rows.Next() {
		var (
			account, fingerprint, network string
			merchants                     []string
			refused                       int64
			charge, chain, outcome, netw  *string
			at                            *time.Time
			class                         string
			category, mac, month, year    int
			capReached                    *bool
			settledAt                     *time.Time
			hold, paymentMethod, currency string
		)
		err := rows.Scan(&account, &fingerprint, &network, &merchants, &refused,
			&charge, &chain, &at, &outcome, &class, &netw, &category, &mac, &month, &year, &capReached, &settledAt,
			&hold, &paymentMethod, &currency)
		if err != nil {
			return nil, fmt.Errorf("store: reattempt report: %w", err)
		}
		if cur == nil || cur.ProcessorAccount != account || cur.Fingerprint != fingerprint {
			cards = append(cards, report.Card{ProcessorAccount: account, Fingerprint: fingerprint,
				Network: decline.ParseNetwork(network), Merchants: merchants, Refused: int(refused)})
			cur = &cards[len(cards)-1]
		}
		if charge == nil { // a card with refusals only
			continue
		}
		cur.Attempts = append(cur.Attempts, report.Attempt{
			Attempt: decline.Attempt{
				Charge:     *charge,
				Chain:      orEmpty(chain),
				At:         at.UTC(),
				Outcome:    decline.Outcome(orEmpty(outcome)),
				Class:      decline.Class(class),
				Network:    decline.ParseNetwork(orEmpty(netw)),
				MAC:        decline.MAC(mac),
				Expiry:     decline.Expiry{Year: year, Month: month},
				CapReached: capReached != nil && *capReached,
				KnownAt:    knownAt(settledAt),
				Hold:       decline.ParseHold(hold),

				PaymentMethod: paymentMethod,
				Currency:      currency,
			},
			Category: decline.Category(category),
		})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: reattempt report: %w", err)
	}
	return cards, nil
}

func orEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// knownAt is when the gateway learned an attempt's outcome: settled_at, in UTC; zero for a
// pending attempt (the audit then reads it as known when sent, which a pending outcome never
// makes a violation anyway).
func knownAt(settledAt *time.Time) time.Time {
	if settledAt == nil {
		return time.Time{}
	}
	return settledAt.UTC()
}
