package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/store"
)

// inFlightCase is a pending charge as TestResolveWhileAnAttemptMayExecute sets it up: every
// time is an offset from the transaction's start, negative in the past.
type inFlightCase struct {
	name   string
	status string // the charge's status (pending when empty)
	// sentAgo, when set, records one attempt sent that long ago, with a timeout of 4 s.
	sentAgo time.Duration
	// lockedFor, when set, locks the charge's key until that long from now.
	lockedFor time.Duration
	// checkAgo is when the last check (finding nothing) started; replay is its replay's
	// answer ("" for none).
	checkAgo time.Duration
	replay   string
	margin   time.Duration
	// want: nil, reconcile.ErrAttemptInFlight or reconcile.ErrReconcileFirst; wantUntil is the
	// in-flight end the error names, as an offset from the attempt's start, the lock's end
	// or the check's start (see until).
	want      error
	wantUntil func(sent, locked, check time.Time) time.Time
}

// TestResolveWhileAnAttemptMayExecute: an operator cannot resolve a charge while any attempt
// of it may still be executing at the processor — sent less than its timeout plus the
// margin ago, its request still open, or a replay unanswered — and is told until when; a
// check that ran before then does not count, one after it does.
func TestResolveWhileAnAttemptMayExecute(t *testing.T) {
	t.Parallel()
	const margin = reconcile.DefaultInFlightMargin
	afterSend := func(sent, _, _ time.Time) time.Time { return sent.Add(4*time.Second + margin) }
	for _, tc := range []inFlightCase{
		// The campaign's case: the processor delays the first attempt; 8 s after the send a
		// check finds nothing and the operator tries to resolve.
		{name: "attempt sent 8 s ago", sentAgo: 8 * time.Second, checkAgo: time.Second,
			want: reconcile.ErrAttemptInFlight, wantUntil: afterSend},
		{name: "attempt sent 33 s ago", sentAgo: 33 * time.Second, checkAgo: time.Second,
			want: reconcile.ErrAttemptInFlight, wantUntil: afterSend},
		{name: "attempt sent 40 s ago, checked after its window", sentAgo: 40 * time.Second, checkAgo: time.Second},
		{name: "attempt sent 40 s ago, checked within its window", sentAgo: 40 * time.Second, checkAgo: 10 * time.Second,
			want: reconcile.ErrReconcileFirst},
		{name: "a smaller margin", sentAgo: 8 * time.Second, checkAgo: time.Second, margin: time.Second},
		{name: "request still open", status: "processing", lockedFor: 5 * time.Second, checkAgo: time.Second, want: reconcile.ErrAttemptInFlight,
			wantUntil: func(_, locked, _ time.Time) time.Time { return locked.Add(margin) }},
		{name: "request open in a charge still processing", status: "processing", sentAgo: 5 * time.Minute, checkAgo: time.Second,
			want: reconcile.ErrAttemptInFlight},
		{name: "unanswered replay", sentAgo: 5 * time.Minute, checkAgo: time.Second, replay: `{"class": "timeout"}`,
			want:      reconcile.ErrAttemptInFlight,
			wantUntil: func(_, _, check time.Time) time.Time { return check.Add(2*time.Minute + margin) }},
		{name: "replay not sent", sentAgo: 5 * time.Minute, checkAgo: time.Second, replay: `{"class": "not_sent"}`},
		{name: "answered replay", sentAgo: 5 * time.Minute, checkAgo: time.Second, replay: `{"class": "terminal", "http_status": 400}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tx := dbtest.Tx(t)
			sent, locked, check := setupInFlight(t, ctx, tx, tc)
			m := tc.margin
			_, err := reconcile.Resolve(ctx, store.New(tx), reconcile.ManualResolution{MerchantID: "m_flight", ChargeID: "ch_flight",
				Outcome: charge.StatusFailed, Note: "nothing at the processor", Actor: "operator:key_1", Within: 10 * time.Minute,
				InFlightMargin: m})
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("got %v, want the charge resolved", err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			var inFlight *reconcile.AttemptInFlightError
			if errors.As(err, &inFlight) {
				var now time.Time
				if err := tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now); err != nil {
					t.Fatal(err)
				}
				if !inFlight.Until.After(now) {
					t.Fatalf("in flight until %v: not after now (%v)", inFlight.Until, now)
				}
				if tc.wantUntil != nil {
					if want := tc.wantUntil(sent, locked, check); !inFlight.Until.Equal(want) {
						t.Fatalf("in flight until %v, want %v", inFlight.Until, want)
					}
				}
			}
		})
	}
}

// setupInFlight writes tc's charge ch_flight of merchant m_flight, and returns when its
// attempt was sent, until when its key is locked and when its last check started.
func setupInFlight(t *testing.T, ctx context.Context, tx pgx.Tx, tc inFlightCase) (sent, locked, check time.Time) {
	t.Helper()
	status := tc.status
	if status == "" {
		status = "pending"
	}
	var now time.Time
	if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	sent, check = now.Add(-tc.sentAgo), now.Add(-tc.checkAgo)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`INSERT INTO merchants (id) VALUES ('m_flight')`)
	exec(`INSERT INTO charges (id, merchant_id, amount, currency, payment_method, initiator, status,
			processor_account, idempotency_key, created_at, updated_at, live)
		VALUES ('ch_flight', 'm_flight', 1000, 'usd', 'pm_card_visa', 'customer', $1::text, 'acct_1', 'order-1',
			now() - interval '10 minutes', now(), $1 IN ('processing', 'pending', 'succeeded'))`, status)
	if tc.sentAgo > 0 {
		exec(`UPDATE charges SET first_sent_at = $1, attempt_log = jsonb_build_array(jsonb_build_array(1,
			(extract(epoch FROM $1::timestamptz) * 1000000)::bigint, 4000, 4000, 'timeout', 0, '', '', 0, 0, 0, 0))::text
			WHERE id = 'ch_flight'`, sent)
	}
	var lock *time.Time
	if tc.lockedFor > 0 {
		locked = now.Add(tc.lockedFor)
		lock = &locked
	}
	exec(`INSERT INTO idempotency_keys (merchant_id, key, fingerprint, charge_id, locked_until)
		VALUES ('m_flight', 'order-1', '\x00', 'ch_flight', $1)`, lock)
	evidence := `{"at": "` + check.UTC().Format(time.RFC3339Nano) + `", "account": "acct_1"`
	if tc.replay != "" {
		evidence += `, "replay": ` + tc.replay
	}
	evidence += `}`
	exec(`INSERT INTO reconciliation_checks (charge_id, n, at, kind, body)
		VALUES ('ch_flight', 1, $1, 'pending', jsonb_build_object('n', 1, 'at', $1::timestamptz, 'evidence', $2::jsonb))`,
		check, evidence)
	exec(`INSERT INTO reconciliations (charge_id, next_check_at, checks, last_check_at, last_inconclusive_at)
		VALUES ('ch_flight', now() + interval '1 hour', 1, $1, $1)`, check)
	return sent, locked, check
}
