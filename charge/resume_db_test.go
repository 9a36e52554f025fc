package charge_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/idempotency"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/store"
)

// A retryably failed charge is retried with its key after the processor's key retention
// ended, while its payment method cannot be read. Nothing may be sent under the key any more,
// so the answer is failed for good (retryable: false), stored, and replayed: never "retry
// later" for an operation that can no longer run.
func TestServiceRetryOfAFailedChargeAfterTheKeyWindowIsFinal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, m := serviceMerchant(t)
	req := charge.CreateParams{MerchantID: m, Key: "k", Fingerprint: idempotency.Fingerprint{48}, Request: visaRequest, Timeout: 2 * time.Second}
	id := failedRetryably(t, db, req)
	aDayLater(t, id)
	sent := false
	unreadable := unreadableCardService(db, &sent)
	for range 2 {
		wantFailedForGood(t, unreadable, req, charge.CodeKeyExpired)
	}
	if sent {
		t.Fatal("a request was sent under a key past its window")
	}
	stored, err := db.Charge(ctx, m, id)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status != charge.StatusFailed || stored.Failure == nil || stored.Failure.Retryable {
		t.Fatalf("stored charge: %s %+v, want failed for good", stored.Status, stored.Failure)
	}
}

// The same retry past the key's window, with a card that can be read: the charge stays failed
// for good, sends nothing, and records no decision admitting an attempt that never happens,
// nor a card attempt.
func TestServiceRetryOfAFailedChargeAfterTheKeyWindowAdmitsNothing(t *testing.T) {
	t.Parallel()
	db, m := serviceMerchant(t)
	req := charge.CreateParams{MerchantID: m, Key: "k", Fingerprint: idempotency.Fingerprint{49}, Request: visaRequest, Timeout: 2 * time.Second}
	id := failedRetryably(t, db, req)
	aDayLater(t, id)
	decisionsBefore := countFor(t, allowedDecisionsSQL, id)
	sent := false
	wantFailedForGood(t, charge.NewService(charge.ServiceConfig{Store: db, Render: renderJSON, Cards: okCards(),
		Runner: sendingRunner(&sent)}), req, charge.CodeKeyExpired)
	if sent {
		t.Fatal("a request was sent under a key past its window")
	}
	if n := countFor(t, allowedDecisionsSQL, id); n != decisionsBefore {
		t.Errorf("allowed decisions for the charge: %d after the retry, %d before; want no new one", n, decisionsBefore)
	}
	if n := countFor(t, `SELECT count(*) FROM card_attempts WHERE charge_id = $1`, id); n != 0 {
		t.Errorf("card attempts for the charge: %d, want 0", n)
	}
}

// allowedDecisionsSQL counts the decisions that admitted an attempt of charge $1.
const allowedDecisionsSQL = `SELECT count(*) FROM reattempt_decisions WHERE charge_id = $1 AND allowed`

// failedRetryably runs req through a service whose run fails retryably (nothing reached the
// processor) and returns the charge's id.
func failedRetryably(t *testing.T, db *store.DB, req charge.CreateParams) string {
	t.Helper()
	svc := charge.NewService(charge.ServiceConfig{Store: db, Render: renderJSON, Cards: okCards(),
		Runner: fnRunner{run: func(context.Context, *charge.Charge) charge.Outcome {
			return charge.Outcome{Status: charge.StatusFailed, Failure: &charge.Failure{Code: "circuit_open", Retryable: true}}
		}}})
	resp, err := svc.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		ID      string          `json:"id"`
		Failure *charge.Failure `json:"failure"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil || body.Failure == nil || !body.Failure.Retryable {
		t.Fatalf("first request: %d %s, want failed retryably", resp.Status, resp.Body)
	}
	return body.ID
}

// aDayLater moves the charge a day into the past: its processor key's window has ended.
func aDayLater(t *testing.T, id string) {
	t.Helper()
	if _, err := dbtest.Pool(t).Exec(context.Background(), `UPDATE charges SET created_at = created_at - interval '24 hours',
		finalized_at = finalized_at - interval '24 hours' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
}

// sendingRunner is a runner that approves, noting that it sent something.
func sendingRunner(sent *bool) fnRunner {
	return fnRunner{run: func(context.Context, *charge.Charge) charge.Outcome {
		*sent = true
		return charge.Outcome{Status: charge.StatusSucceeded, Attempts: []charge.Attempt{{N: 1, StartedAt: time.Now(), HTTPStatus: 200}}}
	}}
}

// wantFailedForGood sends req through svc and fails the test unless the answer is failed with
// code and retryable false.
func wantFailedForGood(t *testing.T, svc *charge.Service, req charge.CreateParams, code string) {
	t.Helper()
	resp, err := svc.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Failure *charge.Failure `json:"failure"`
	}
	if err := json.Unmarshal(resp.Body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Failure == nil || got.Failure.Code != code || got.Failure.Retryable {
		t.Fatalf("retry: answered %d %s; want failed %s, retryable false", resp.Status, resp.Body, code)
	}
}

// countFor counts the rows sql ($1: the charge's id) finds.
func countFor(t *testing.T, sql, id string) int {
	t.Helper()
	var n int
	if err := dbtest.Pool(t).QueryRow(context.Background(), sql, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A charge left processing by a request that died is resumed — by a retry of its key, or by
// the completer — and declined for insufficient funds; meanwhile another charge on the card
// was declined as lost. The decline's verdict on reattempting the card, answered and stored
// for replay, is decided on the card's history, as the first run's would have been: never.
func TestServiceResumedDeclineSeesTheCardsHistory(t *testing.T) {
	t.Parallel()
	for _, by := range []string{"retry", "completer"} {
		t.Run(by, func(t *testing.T) {
			t.Parallel()
			leavesStuckCharges(t)
			ctx := context.Background()
			db, m := serviceMerchant(t)
			cards := okCards()
			card, _ := cards.card(ctx, "")
			fp := idempotency.Fingerprint{49}
			first, err := charge.Begin(ctx, db, charge.BeginParams{MerchantID: m, Key: "k", Fingerprint: fp,
				LockFor: time.Millisecond, New: newCharge(m, ""),
				Card: &charge.Card{Fingerprint: card.Fingerprint, Network: card.Network, ExpMonth: int(card.ExpMonth), ExpYear: int(card.ExpYear)}})
			if err != nil || !first.Created {
				t.Fatalf("first request: %+v, %v", first, err)
			}
			declineWith := func(code string) fnRunner {
				return fnRunner{run: func(context.Context, *charge.Charge) charge.Outcome {
					return charge.Outcome{Status: charge.StatusDeclined, Evidence: &processor.Decline{DeclineCode: code},
						Attempts: []charge.Attempt{{N: 1, StartedAt: time.Now(), Class: "decline", HTTPStatus: 402}}}
				}}
			}
			lost := charge.NewService(charge.ServiceConfig{Store: db, Render: renderJSON, Cards: cards, Runner: declineWith("lost_card")})
			if r, err := lost.Create(ctx, charge.CreateParams{MerchantID: m, Key: "k2", Fingerprint: idempotency.Fingerprint{50},
				Request: visaRequest, Timeout: 2 * time.Second}); err != nil || r.Status != 402 {
				t.Fatalf("charge declined as lost: %+v, %v", r, err)
			}
			lockExpires(t, m, "k") // the dead request's lock expires
			svc := charge.NewService(charge.ServiceConfig{Store: db, Render: renderJSON, Cards: cards,
				Runner: declineWith("insufficient_funds")})
			if by == "retry" {
				if _, err := svc.Create(ctx, charge.CreateParams{MerchantID: m, Key: "k", Fingerprint: fp, Request: visaRequest,
					Timeout: 2 * time.Second}); err != nil {
					t.Fatal(err)
				}
			} else {
				if _, err := dbtest.Pool(t).Exec(ctx, `UPDATE charges SET updated_at = now() - interval '1 hour' WHERE id = $1`,
					first.Charge.ID); err != nil {
					t.Fatal(err)
				}
				if n, err := charge.NewCompleter(svc, charge.CompleterConfig{Idle: time.Second, Timeout: time.Second, Batch: 10}).Pass(ctx); err != nil || n != 1 {
					t.Fatalf("completer: %d, %v; want 1 completed", n, err)
				}
			}
			got, err := db.Charge(ctx, m, first.Charge.ID)
			if err != nil {
				t.Fatal(err)
			}
			var blk charge.DeclineJSON
			if err := json.Unmarshal(got.Decline, &blk); err != nil {
				t.Fatalf("decline block %s: %v", got.Decline, err)
			}
			if got.Status != charge.StatusDeclined || blk.Reattempt.Allowed || blk.Reattempt.Reason != "never_reattempt" {
				t.Fatalf("resumed charge: %s, reattempt %+v; want declined, never_reattempt", got.Status, blk.Reattempt)
			}
		})
	}
}
