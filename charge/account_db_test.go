package charge_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/idempotency"
	"github.com/paygate/paygate/internal/dbtest"
)

// otherAccountRunner is a runner configured for another processor account than the one the
// charges were recorded at; it notes whether anything was sent.
type otherAccountRunner struct{ sent *bool }

func (r otherAccountRunner) Account() string { return "acct_2" }
func (r otherAccountRunner) Run(ctx context.Context, c *charge.Charge) charge.Outcome {
	return sendingRunner(r.sent).Run(ctx, c)
}

// A charge recorded at one processor account is never sent to another: the gateway was
// reconfigured (or its built-in simulator restarted) between its runs.
func TestServiceNeverSendsAChargeToAnotherAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("a retry of a failed charge", func(t *testing.T) {
		t.Parallel()
		db, m := serviceMerchant(t)
		req := charge.CreateParams{MerchantID: m, Key: "k", Fingerprint: idempotency.Fingerprint{50}, Request: visaRequest, Timeout: 2 * time.Second}
		id := failedRetryably(t, db, req)
		decisions := countFor(t, `SELECT count(*) FROM reattempt_decisions WHERE charge_id = $1`, id)
		sent := false
		other := charge.NewService(charge.ServiceConfig{Store: db, Render: renderJSON, Cards: okCards(), Runner: otherAccountRunner{&sent}})
		for range 2 {
			wantFailedForGood(t, other, req, charge.CodeAccountChanged)
		}
		if sent {
			t.Fatal("a charge of acct_1 was sent to acct_2")
		}
		if n := countFor(t, `SELECT count(*) FROM reattempt_decisions WHERE charge_id = $1`, id); n != decisions {
			t.Errorf("decisions for the charge: %d after the retries, %d before; want no new one", n, decisions)
		}
		stored, err := db.Charge(ctx, m, id)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Status != charge.StatusFailed || stored.Failure == nil || stored.Failure.Retryable || stored.ProcessorAccount != "acct_1" {
			t.Fatalf("stored charge: %s %+v at %s, want failed for good at acct_1", stored.Status, stored.Failure, stored.ProcessorAccount)
		}
	})

	for _, by := range []string{"retry", "completer"} {
		t.Run("a charge left processing, resumed by the "+by, func(t *testing.T) {
			t.Parallel()
			leavesStuckCharges(t)
			db, m := serviceMerchant(t)
			fp := idempotency.Fingerprint{51}
			first, err := charge.Begin(ctx, db, charge.BeginParams{MerchantID: m, Key: "k", Fingerprint: fp,
				LockFor: time.Millisecond, New: newCharge(m, ""), Card: testCard})
			if err != nil || !first.Created {
				t.Fatalf("first request: %+v, %v", first, err)
			}
			if _, err := dbtest.Pool(t).Exec(ctx, `UPDATE charges SET updated_at = now() - interval '1 hour' WHERE id = $1`, first.Charge.ID); err != nil {
				t.Fatal(err)
			}
			lockExpires(t, m, "k") // the dead request's lock expires
			sent := false
			other := charge.NewService(charge.ServiceConfig{Store: db, Render: renderJSON, Cards: okCards(), Runner: otherAccountRunner{&sent}})
			if by == "retry" {
				resp, err := other.Create(ctx, charge.CreateParams{MerchantID: m, Key: "k", Fingerprint: fp, Request: visaRequest, Timeout: 2 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				if resp.Status != 202 {
					t.Errorf("retry: answered %d %s, want 202 pending", resp.Status, resp.Body)
				}
			} else if _, err := charge.NewCompleter(other, charge.CompleterConfig{Idle: time.Millisecond}).Pass(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := db.Charge(ctx, m, first.Charge.ID)
			if err != nil {
				t.Fatal(err)
			}
			if sent || got.Status != charge.StatusPending || got.ProcessorAccount != "acct_1" {
				t.Fatalf("resumed at another account: sent %v, charge %s at %s; want nothing sent, pending at acct_1",
					sent, got.Status, got.ProcessorAccount)
			}
		})
	}
}

// A charge's outcome stored by its own run settles its card attempt then: the card's history
// says when the gateway learned the outcome (see the reattempt report's violations in
// hindsight).
func TestFinishSettlesTheCardAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, m := serviceMerchant(t)
	svc := charge.NewService(charge.ServiceConfig{Store: db, Render: renderJSON, Cards: okCards(),
		Runner: fnRunner{run: func(context.Context, *charge.Charge) charge.Outcome {
			return charge.Outcome{Status: charge.StatusSucceeded, Attempts: []charge.Attempt{{N: 1, StartedAt: time.Now(), HTTPStatus: 200}}}
		}}})
	resp, err := svc.Create(ctx, charge.CreateParams{MerchantID: m, Key: "k", Fingerprint: idempotency.Fingerprint{52},
		Request: visaRequest, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		t.Fatal(err)
	}
	var settledAfterSend bool
	if err := dbtest.Pool(t).QueryRow(ctx, `SELECT settled_at >= at FROM card_attempts WHERE charge_id = $1`, body.ID).Scan(&settledAfterSend); err != nil || !settledAfterSend {
		t.Fatalf("settled_at of an approved attempt: %v (%v), want set, not before it was sent", settledAfterSend, err)
	}
}

// A charge the processor holds in requires_action (the card asks for 3-D Secure) is pending,
// but no authorization reached the card network: it takes no slot of the network caps, so a
// shopper who retries a card that asks for authentication is never blocked by it.
func TestRequiresActionTakesNoCardSlot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, m := serviceMerchant(t)
	svc := charge.NewService(charge.ServiceConfig{Store: db, Render: renderJSON, Cards: okCards(),
		Runner: fnRunner{run: func(context.Context, *charge.Charge) charge.Outcome {
			return charge.Outcome{Status: charge.StatusPending, ProcessorRef: "pi_3ds", ProcessorStatus: "requires_action",
				Attempts: []charge.Attempt{{N: 1, StartedAt: time.Now(), HTTPStatus: 200, Class: "unknown_final"}}}
		}}})
	resp, err := svc.Create(ctx, charge.CreateParams{MerchantID: m, Key: "k", Fingerprint: idempotency.Fingerprint{53},
		Request: visaRequest, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil || body.Status != "pending" {
		t.Fatalf("answer: %d %s, want pending", resp.Status, resp.Body)
	}
	if n := countFor(t, `SELECT count(*) FROM card_attempts WHERE charge_id = $1`, body.ID); n != 0 {
		t.Fatalf("card attempts of a charge waiting for authentication: %d, want 0", n)
	}
}

// hangingAccountRunner cannot read the processor's account: every read waits until its
// context ends. Its runs succeed.
type hangingAccountRunner struct{ sent *bool }

func (r hangingAccountRunner) Account() string { return "acct_1" }
func (r hangingAccountRunner) Run(ctx context.Context, c *charge.Charge) charge.Outcome {
	return sendingRunner(r.sent).Run(ctx, c)
}
func (r hangingAccountRunner) CurrentAccount(ctx context.Context) string {
	<-ctx.Done()
	return "acct_1"
}
func (r hangingAccountRunner) AccountMoved(ctx context.Context, _ string) bool {
	<-ctx.Done()
	return false
}

// A read of the processor's account that does not finish never keeps the caller past its
// deadline: the new charge and the retry of a failed one are answered within it.
func TestAccountReadKeepsTheCallersDeadline(t *testing.T) {
	t.Parallel()
	db, m := serviceMerchant(t)
	const timeout = 600 * time.Millisecond
	failed := charge.CreateParams{MerchantID: m, Key: "k_failed", Fingerprint: idempotency.Fingerprint{60}, Request: visaRequest, Timeout: timeout}
	failedRetryably(t, db, failed)
	sent := false
	svc := charge.NewService(charge.ServiceConfig{Store: db, Render: renderJSON, Cards: okCards(), Runner: hangingAccountRunner{&sent}})
	for _, req := range []charge.CreateParams{
		{MerchantID: m, Key: "k_new", Fingerprint: idempotency.Fingerprint{61}, Request: visaRequest, Timeout: timeout},
		failed,
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		_, err := svc.Create(ctx, req)
		cancel()
		if err != nil {
			t.Fatalf("%s: got error %v", req.Key, err)
		}
		if took := time.Since(start); took > timeout {
			t.Errorf("%s: answered after %v, want within the caller's %v", req.Key, took, timeout)
		}
	}
}
