package charge_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/idempotency"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/store"
)

// These tests run the charge service on the store of record, with the processor replaced by
// scripted runs: what a run answers is the test's, what the service stores is the store's.

// fnRunner is a charge.Runner whose runs are run.
type fnRunner struct {
	run func(ctx context.Context, c *charge.Charge) charge.Outcome
}

func (r fnRunner) Account() string                                          { return "acct_1" }
func (r fnRunner) Run(ctx context.Context, c *charge.Charge) charge.Outcome { return r.run(ctx, c) }

// fnCards is a charge.Cards whose reads are card.
type fnCards struct {
	card func(ctx context.Context, pm string) (processor.Card, error)
}

func (f fnCards) Card(ctx context.Context, pm string) (processor.Card, error) { return f.card(ctx, pm) }

// okCards reads every payment method as a Visa card of its own for each test: the network
// rules count per card, across merchants.
func okCards() fnCards {
	fp := "fp_" + charge.NewID()[17:]
	return fnCards{card: func(context.Context, string) (processor.Card, error) {
		return processor.Card{Fingerprint: fp, Brand: "visa", Network: "visa", ExpMonth: 12, ExpYear: 2034}, nil
	}}
}

func renderJSON(c *charge.Charge) charge.Response {
	b, _ := json.Marshal(map[string]any{"id": c.ID, "status": c.Status, "failure": c.Failure})
	st := map[charge.Status]int{charge.StatusSucceeded: 200, charge.StatusDeclined: 402, charge.StatusPending: 202,
		charge.StatusProcessing: 202, charge.StatusFailed: 503}[c.Status]
	return charge.Response{Status: st, Body: b}
}

// unreadableCardService is a service on db whose reads of a payment method fail and whose
// runs succeed, setting *sent.
func unreadableCardService(db *store.DB, sent *bool) *charge.Service {
	return charge.NewService(charge.ServiceConfig{Store: db, Render: renderJSON,
		Cards: fnCards{card: func(context.Context, string) (processor.Card, error) {
			return processor.Card{}, errors.New("processor: payment method: 503")
		}},
		Runner: sendingRunner(sent)})
}

var visaRequest = charge.Request{Amount: 1000, Currency: "usd", PaymentMethod: "pm_card_visa",
	Initiator: charge.InitiatorCustomer, ReattemptMode: charge.ReattemptManual}

// serviceMerchant is a merchant of its own on a real pool (the service commits its phases).
func serviceMerchant(t *testing.T) (*store.DB, string) {
	t.Helper()
	db := store.New(dbtest.Pool(t))
	m := "m_" + charge.NewID()[17:]
	newMerchant(t, db, m)
	return db, m
}

// A charge left processing by a request that died after sending is resumed by a retry of its
// key; this run's request is refused as invalid. The first run's request may have been
// executed: the charge is pending, never failed.
func TestServiceResumedRunRefusedAsInvalidStaysPending(t *testing.T) {
	t.Parallel()
	leavesStuckCharges(t)
	ctx := context.Background()
	db, m := serviceMerchant(t)
	fp := idempotency.Fingerprint{42}
	first, err := charge.Begin(ctx, db, charge.BeginParams{MerchantID: m, Key: "k", Fingerprint: fp,
		LockFor: time.Millisecond, New: newCharge(m, ""), Card: testCard})
	if err != nil || !first.Created {
		t.Fatalf("first request: %+v, %v", first, err)
	}
	lockExpires(t, m, "k") // the dead request's lock expires
	svc := charge.NewService(charge.ServiceConfig{Store: db, Render: renderJSON, Cards: okCards(),
		Runner: fnRunner{run: func(context.Context, *charge.Charge) charge.Outcome {
			return charge.Outcome{Status: charge.StatusFailed, Failure: &charge.Failure{Code: "invalid_request", Retryable: false},
				Attempts: []charge.Attempt{{N: 1, StartedAt: time.Now(), Class: "terminal", HTTPStatus: 400}}}
		}}})
	resp, err := svc.Create(ctx, charge.CreateParams{MerchantID: m, Key: "k", Fingerprint: fp, Request: visaRequest,
		Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.Charge(ctx, m, first.Charge.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != charge.StatusPending || resp.Status != 202 {
		t.Fatalf("resumed charge: status %s, answered %d %s; want pending, 202", got.Status, resp.Status, resp.Body)
	}
}

// The completer claims the charges it resumes one at a time: each key's lock covers the run
// that follows its claim, so an inbound retry of a charge the completer is running hears 409
// in use, however many charges the pass takes.
func TestCompleterHoldsEachKeyWhileItRuns(t *testing.T) {
	t.Parallel()
	leavesStuckCharges(t)
	ctx := context.Background()
	db, m := serviceMerchant(t)
	fp := idempotency.Fingerprint{43}
	keys := map[string]string{}
	for _, k := range []string{"a", "b", "c"} {
		b, err := charge.Begin(ctx, db, charge.BeginParams{MerchantID: m, Key: k, Fingerprint: fp,
			LockFor: time.Millisecond, New: newCharge(m, ""), Card: testCard})
		if err != nil || !b.Created {
			t.Fatalf("begin %s: %+v, %v", k, b, err)
		}
		keys[b.Charge.ID] = k
	}
	// Left processing for an hour.
	if _, err := dbtest.Pool(t).Exec(ctx, `UPDATE charges SET updated_at = now() - interval '1 hour'
		WHERE merchant_id = $1`, m); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		lockExpires(t, m, k)
	}
	var (
		mu       sync.Mutex
		runs     int
		verdicts []idempotency.Verdict
	)
	// Each key is locked for 300 + 100 ms from its claim; the three runs take 900 ms.
	svc := charge.NewService(charge.ServiceConfig{Store: db, Render: renderJSON, Cards: okCards(), LockMargin: 100 * time.Millisecond,
		Runner: fnRunner{run: func(ctx context.Context, c *charge.Charge) charge.Outcome {
			mu.Lock()
			runs++
			last := runs == 3
			mu.Unlock()
			if last {
				b, err := charge.Begin(ctx, db, charge.BeginParams{MerchantID: m, Key: keys[c.ID], Fingerprint: fp,
					LockFor: time.Minute, New: newCharge(m, ""), Card: testCard})
				if err != nil {
					t.Error(err)
				}
				verdicts = append(verdicts, b.Verdict)
			}
			<-ctx.Done() // no answer: the run uses its deadline
			return charge.Outcome{Status: charge.StatusPending}
		}}})
	n, err := charge.NewCompleter(svc, charge.CompleterConfig{Idle: time.Second, Timeout: 300 * time.Millisecond, Batch: 10}).Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 || len(verdicts) != 1 || verdicts[0] != idempotency.InUse {
		t.Fatalf("completed %d; inbound retry during the last run: %v; want 3 completed and InUse", n, verdicts)
	}
}

// The caller's deadline (Request-Timeout-Ms) covers the whole request: a slow read of the
// payment method leaves the processor call less time, and the answer comes within it.
func TestServiceAnswersWithinTheCallersDeadline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, m := serviceMerchant(t)
	// The engine's clock: the read of the payment method takes 900 ms on it.
	var (
		mu      sync.Mutex
		elapsed time.Duration
	)
	start := time.Now()
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return start.Add(elapsed)
	}
	read := okCards()
	cards := fnCards{card: func(ctx context.Context, pm string) (processor.Card, error) {
		mu.Lock()
		elapsed += 900 * time.Millisecond
		mu.Unlock()
		return read.card(ctx, pm)
	}}
	var left time.Duration
	svc := charge.NewService(charge.ServiceConfig{Store: db, Render: renderJSON, Cards: cards, Now: clock,
		Runner: fnRunner{run: func(ctx context.Context, c *charge.Charge) charge.Outcome {
			d, _ := ctx.Deadline()
			left = time.Until(d)
			return charge.Outcome{Status: charge.StatusPending}
		}}})
	if _, err := svc.Create(ctx, charge.CreateParams{MerchantID: m, Key: "k", Fingerprint: idempotency.Fingerprint{44},
		Request: visaRequest, Timeout: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if left > 2100*time.Millisecond || left < 1500*time.Millisecond {
		t.Fatalf("the run's deadline: %v left, want the caller's 3 s less the card's 900 ms and the answer's margin", left)
	}
}

// A retryably failed charge is retried with its key while the payment method cannot be
// read; meanwhile another charge on the card was declined as lost. The network rules cannot
// decide on a card the gateway cannot read: the charge stays failed, and nothing is sent.
func TestServiceRetryOfAFailedChargeWithoutItsCardSendsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, m := serviceMerchant(t)
	fp := idempotency.Fingerprint{45}
	card := okCards()
	fail := fnRunner{run: func(context.Context, *charge.Charge) charge.Outcome {
		return charge.Outcome{Status: charge.StatusFailed, Failure: &charge.Failure{Code: "circuit_open", Retryable: true}}
	}}
	svc := charge.NewService(charge.ServiceConfig{Store: db, Render: renderJSON, Cards: card, Runner: fail})
	if _, err := svc.Create(ctx, charge.CreateParams{MerchantID: m, Key: "k", Fingerprint: fp, Request: visaRequest, Timeout: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	lost := fnRunner{run: func(context.Context, *charge.Charge) charge.Outcome {
		return charge.Outcome{Status: charge.StatusDeclined, Evidence: &processor.Decline{DeclineCode: "lost_card"},
			Attempts: []charge.Attempt{{N: 1, StartedAt: time.Now(), Class: "decline", HTTPStatus: 402}}}
	}}
	svcLost := charge.NewService(charge.ServiceConfig{Store: db, Render: renderJSON, Cards: card, Runner: lost})
	if r, err := svcLost.Create(ctx, charge.CreateParams{MerchantID: m, Key: "k2", Fingerprint: idempotency.Fingerprint{46},
		Request: visaRequest, Timeout: 2 * time.Second}); err != nil || r.Status != 402 {
		t.Fatalf("charge declined as lost: %+v, %v", r, err)
	}
	var refused *charge.ReattemptRefusedError
	if _, err := svc.Create(ctx, charge.CreateParams{MerchantID: m, Key: "k3", Fingerprint: idempotency.Fingerprint{47},
		Request: visaRequest, Timeout: 2 * time.Second}); !errors.As(err, &refused) {
		t.Fatalf("new charge on the lost card: %v, want refused", err)
	}

	sent := false
	unreadable := unreadableCardService(db, &sent)
	resp, err := unreadable.Create(ctx, charge.CreateParams{MerchantID: m, Key: "k", Fingerprint: fp, Request: visaRequest, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if sent || resp.Status != 503 {
		t.Fatalf("retry without the card: sent %v, answered %d %s; want nothing sent, 503", sent, resp.Status, resp.Body)
	}
}

// A run that stalled while its charge was settled without it answers the charge as settled,
// and its own outcome is not stored.
func TestServiceLateRunAnswersTheSettledCharge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, m := serviceMerchant(t)
	svc := charge.NewService(charge.ServiceConfig{Store: db, Render: renderJSON, Cards: okCards(),
		Runner: fnRunner{run: func(_ context.Context, c *charge.Charge) charge.Outcome {
			// Meanwhile, the charge is settled without this run (as the completer would).
			settled := *c
			settled.Status = charge.StatusSucceeded
			if err := db.FinishCharge(ctx, charge.FinishParams{MerchantID: m, Key: "other-run", Charge: &settled,
				Card: &charge.CardOutcome{Outcome: "approved"}}); err != nil {
				t.Error(err)
			}
			return charge.Outcome{Status: charge.StatusPending}
		}}})
	resp, err := svc.Create(ctx, charge.CreateParams{MerchantID: m, Key: "k", Fingerprint: idempotency.Fingerprint{48},
		Request: visaRequest, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 200 {
		t.Fatalf("late run: answered %d %s, want the settled charge (200)", resp.Status, resp.Body)
	}
}
