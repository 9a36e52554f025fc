package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"go.uber.org/zap"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/jobs"
)

// The dispositions of a processor event, as webhook_events keeps them.
const (
	// DispositionCheck: a check of the charge the event names was enqueued; its read
	// settles the charge, or finds the conflict that sends it to review.
	DispositionCheck = "check"
	// DispositionSettled: the charge is settled (and no operator resolved it): nothing to do.
	DispositionSettled = "settled"
	// DispositionNotFinal: the event announces a PaymentIntent that has not finished
	// (created, processing, requires_action): its final event follows.
	DispositionNotFinal = "not_final"
	// DispositionUnknownCharge: the PaymentIntent carries a paygate charge id that names
	// no charge here: the event waits in review for a person (Webhooks.Receive).
	DispositionUnknownCharge = "unknown_charge"
	// DispositionConflict: the event conflicts with the charge it names (another processor
	// account, another PaymentIntent than the charge's, another amount or currency), whatever
	// the charge's state: a check of the charge was enqueued, which sends it to review with
	// the event.
	DispositionConflict = "conflict"
	// DispositionNotPaygate: the PaymentIntent carries no paygate charge id: paygate did
	// not create it.
	DispositionNotPaygate = "not_paygate"
	// DispositionIgnored: not a payment_intent event.
	DispositionIgnored = "ignored"
)

// EventWaitProcessing is how long the check an event triggered waits for a charge still
// being carried to the processor (its run may end pending); after it, the charge is left to
// its schedule.
const EventWaitProcessing = 10 * time.Minute

// EventProcessingDelay is how long after its event the check of a charge still processing
// is due at the earliest: the event often arrives before the charge's run has recorded the
// answer it is about, which settles the charge without a read.
const EventProcessingDelay = time.Second

// WebhookEventRetention is how long an event id is kept against replays: far longer than the
// processor retries a delivery (3 days at Stripe).
const WebhookEventRetention = 30 * 24 * time.Hour

// ErrChargeProcessing is returned by CheckEvent for a charge still being carried to the
// processor: the check waits for its run to end.
var ErrChargeProcessing = errors.New("reconcile: the charge is still processing")

// EventArgs is the job that runs the check a processor event triggered: one read of the
// PaymentIntent the event names, unique per charge.
type EventArgs struct {
	ChargeID string `json:"charge_id" river:"unique"`
	Event    Event  `json:"event"`
}

// Kind implements river.JobArgs.
func (EventArgs) Kind() string { return "reconcile_charge_event" }

// registerEventChecks registers the event-triggered check on reg. It only reads, whatever
// Config.Replay says, so River may run it again.
func (j *Janitor) registerEventChecks(reg *jobs.Registry) error {
	return jobs.Add(reg, &eventWorker{j: j}, jobs.Retryable(5).InQueue(jobs.QueueReconcile))
}

type eventWorker struct {
	river.WorkerDefaults[EventArgs]
	j *Janitor
}

func (w *eventWorker) Timeout(*river.Job[EventArgs]) time.Duration { return 2 * time.Minute }

func (w *eventWorker) Work(ctx context.Context, job *river.Job[EventArgs]) error {
	_, err := w.j.CheckEvent(ctx, job.Args.ChargeID, job.Args.Event)
	if errors.Is(err, ErrChargeProcessing) {
		age := time.Since(job.Args.Event.ReceivedAt)
		if age < EventWaitProcessing {
			wait := time.Second
			if age > time.Minute {
				wait = 10 * time.Second
			}
			return river.JobSnooze(wait)
		}
		w.j.log.Info("event check left to the schedule: the charge is still processing",
			zap.String("charge_id", job.Args.ChargeID), zap.String("event_id", job.Args.Event.ID))
		return nil
	}
	return err
}

// CheckEvent runs the check event e triggered for a charge now, and records it: one read of
// the PaymentIntent the event names (Reconciler.ReconcileEvent). A charge settled
// meanwhile (and not resolved by an operator) needs nothing; one still processing returns
// ErrChargeProcessing. When another check of the charge was recorded first, it reads the
// charge again and checks once more.
func (j *Janitor) CheckEvent(ctx context.Context, chargeID string, e Event) (Check, error) {
	for run := 0; ; run++ {
		target, err := j.store.ReconcileTarget(ctx, chargeID)
		if err != nil {
			return Check{}, err
		}
		switch {
		case target.Status == charge.StatusProcessing:
			return Check{}, ErrChargeProcessing
		case target.Status != charge.StatusPending && target.Charge.Manual == "" && !eventChargeOf(target).Conflicts(e):
			return Check{}, nil
		}
		chk, err := j.rec.ReconcileEvent(ctx, target.Charge, e)
		if errors.Is(err, ErrStale) && run == 0 {
			continue
		}
		if errors.Is(err, ErrStale) {
			return chk, nil
		}
		if err != nil {
			return chk, fmt.Errorf("reconcile: reconcile %s on event %s: %w", chargeID, e.ID, err)
		}
		j.checks.WithLabelValues(string(chk.Decision.Kind), string(chk.Decision.Path)).Inc()
		j.log.Info("reconciliation check on a processor event", zap.String("charge_id", chargeID),
			zap.String("event_id", e.ID), zap.String("event_type", e.Type), zap.Int("check", chk.N),
			zap.String("kind", string(chk.Decision.Kind)), zap.String("path", string(chk.Decision.Path)),
			zap.String("reason", string(chk.Decision.Reason)))
		return chk, nil
	}
}

// eventChargeOf is the EventCharge of a check's target.
func eventChargeOf(t Target) EventCharge {
	c := t.Charge
	return EventCharge{Found: true, MerchantID: t.MerchantID, Status: t.Status, Manual: c.Manual != "",
		Account: c.Account, ProcessorRef: c.ProcessorRef, Amount: c.Amount, Currency: c.Currency}
}

// EventRecord is a processor event as it is kept: its id, recorded once, with its type, the
// processor account, charge and PaymentIntent it names (empty when it names none), and the
// event itself, kept when it waits in review.
type EventRecord struct {
	ID            string
	Type          string
	Account       string
	ChargeID      string
	PaymentIntent string
	// Evidence is the event as received (Event's JSON), kept only when the event goes to
	// review.
	Evidence json.RawMessage
}

// EventCharge is the charge an event names, as deciding what to do with the event needs it.
type EventCharge struct {
	// Found reports that the charge exists; the other fields are zero otherwise.
	Found      bool
	MerchantID string
	Status     charge.Status
	// Manual reports that an operator resolved the charge: processor evidence may still
	// contradict the resolution.
	Manual bool
	// Account, ProcessorRef, Amount and Currency are the charge's processor account, its
	// PaymentIntent id (empty when unknown), its amount and currency: an event that
	// contradicts them is conflicting evidence.
	Account      string
	ProcessorRef string
	Amount       int64
	Currency     string
}

// EventDecision is what a new event calls for: its disposition, and whether the event itself
// waits in review for a person (it names no charge that could).
type EventDecision struct {
	Disposition string
	Review      bool
}

// EventDecider decides what a new event calls for, inside the transaction that records it
// (where it may enqueue a job with jobs.Queue.InsertTx).
type EventDecider func(ctx context.Context, tx pgx.Tx, c EventCharge) (EventDecision, error)

// EventInReview is a processor event waiting for a person: one that names a charge paygate
// does not have.
type EventInReview struct {
	ID            string          `json:"id"`
	Type          string          `json:"type"`
	ReceivedAt    time.Time       `json:"received_at"`
	Account       string          `json:"account,omitempty"`
	ChargeID      string          `json:"charge_id,omitempty"`
	PaymentIntent string          `json:"payment_intent,omitempty"`
	Disposition   string          `json:"disposition"`
	Event         json.RawMessage `json:"event"`
}

// Conflicts reports whether event e contradicts the charge it names at face value: another
// processor account than the charge's, another PaymentIntent than the charge's known one,
// another amount or currency. Such an event is conflicting evidence whatever the charge's
// state, and its check sends the charge to review (DecideEvent). It is pure.
func (c EventCharge) Conflicts(e Event) bool {
	return (e.Account != "" && c.Account != "" && e.Account != c.Account) ||
		(c.ProcessorRef != "" && e.Intent.ID != "" && e.Intent.ID != c.ProcessorRef) ||
		e.Intent.Amount != c.Amount || !strings.EqualFold(e.Intent.Currency, c.Currency)
}

// WebhookStore records processor events (a *store.DB).
type WebhookStore interface {
	// RecordWebhookEvent records e once, in one transaction with what decide says it calls
	// for (the event's evidence is kept, waiting in review, when the decision says so); seen
	// reports an id recorded before, and then nothing changes.
	RecordWebhookEvent(ctx context.Context, e EventRecord, decide EventDecider) (seen bool, disposition string, err error)
	// ReapWebhookEvents deletes the events received more than retention ago, but those
	// waiting in review.
	ReapWebhookEvents(ctx context.Context, retention time.Duration) (int64, error)
}

// TxInserter enqueues a job inside a transaction (a *jobs.Queue).
type TxInserter interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (jobs.Inserted, error)
}

// Webhooks turns verified processor events into reconciliation: each event id is recorded
// once, and a final event about a charge that is pending (or still processing, or resolved
// by an operator) enqueues the check of that charge, in the same transaction.
type Webhooks struct {
	store        WebhookStore
	queue        TxInserter
	log          *zap.Logger
	dispositions *prometheus.CounterVec
}

// NewWebhooks returns the receiver of processor events on st. Call Attach with the queue the
// checks are enqueued on once it exists.
func NewWebhooks(st WebhookStore, log *zap.Logger) *Webhooks {
	if log == nil {
		log = zap.NewNop()
	}
	w := &Webhooks{store: st, log: log, dispositions: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "paygate", Name: "webhook_dispositions_total",
		Help: "New processor events by what became of them (check, conflict, settled, not_final, unknown_charge, not_paygate, ignored).",
	}, []string{"disposition"})}
	for _, d := range []string{DispositionCheck, DispositionConflict, DispositionSettled, DispositionNotFinal, DispositionUnknownCharge,
		DispositionNotPaygate, DispositionIgnored} {
		w.dispositions.WithLabelValues(d)
	}
	return w
}

// Attach gives the receiver the queue it enqueues checks on.
func (w *Webhooks) Attach(q TxInserter) { w.queue = q }

// RegisterMetrics registers paygate_webhook_dispositions_total on reg.
func (w *Webhooks) RegisterMetrics(reg prometheus.Registerer) error {
	return reg.Register(w.dispositions)
}

// Receive records event e, whose signature was verified, once: it reports seen for an event
// id recorded before, and then changes nothing. A new event is kept with its disposition; a
// final payment_intent event about a charge that is not settled enqueues the check of that
// charge (EventArgs), whose read — never the payload — settles it. It returns the store's
// errors: then nothing was recorded, and the processor's retry of the delivery is a new try.
func (w *Webhooks) Receive(ctx context.Context, e Event) (seen bool, err error) {
	if w.queue == nil {
		return false, errors.New("reconcile: webhooks: no queue attached")
	}
	evidence, err := json.Marshal(e)
	if err != nil {
		return false, fmt.Errorf("reconcile: event %s: %w", e.ID, err)
	}
	rec := EventRecord{ID: e.ID, Type: e.Type, Account: e.Account, ChargeID: e.Intent.ChargeID, PaymentIntent: e.Intent.ID,
		Evidence: evidence}
	seen, disposition, err := w.store.RecordWebhookEvent(ctx, rec, func(ctx context.Context, tx pgx.Tx, c EventCharge) (EventDecision, error) {
		d := EventDecision{Disposition: DispositionCheck}
		switch {
		case !strings.HasPrefix(e.Type, "payment_intent."):
			return EventDecision{Disposition: DispositionIgnored}, nil
		case e.Intent.ChargeID == "":
			return EventDecision{Disposition: DispositionNotPaygate}, nil
		case !c.Found:
			// No charge to put in the review queue: the event itself waits there.
			return EventDecision{Disposition: DispositionUnknownCharge, Review: true}, nil
		case c.Conflicts(e):
			d.Disposition = DispositionConflict
		case c.Status.Final() && !c.Manual:
			return EventDecision{Disposition: DispositionSettled}, nil
		case !e.Final():
			return EventDecision{Disposition: DispositionNotFinal}, nil
		}
		ins := &river.InsertOpts{Queue: jobs.QueueReconcile, UniqueOpts: jobs.UniquePerArgs()}
		if c.Status == charge.StatusProcessing {
			// Its run usually settles it within milliseconds: the check waits for it.
			ins.ScheduledAt = time.Now().Add(EventProcessingDelay)
		}
		opts, err := jobs.ForMerchant(ins, c.MerchantID)
		if err != nil {
			return d, err
		}
		if _, err := w.queue.InsertTx(ctx, tx, EventArgs{ChargeID: e.Intent.ChargeID, Event: e}, opts); err != nil {
			return d, fmt.Errorf("reconcile: enqueue the check of %s on event %s: %w", e.Intent.ChargeID, e.ID, err)
		}
		return d, nil
	})
	if err != nil || seen {
		return seen, err
	}
	w.dispositions.WithLabelValues(disposition).Inc()
	fields := []zap.Field{zap.String("event_id", e.ID), zap.String("event_type", e.Type),
		zap.String("charge_id", e.Intent.ChargeID), zap.String("payment_intent", e.Intent.ID),
		zap.String("disposition", disposition)}
	if disposition == DispositionUnknownCharge {
		// No charge here to put in the review queue: the event waits in review itself.
		w.log.Warn("processor event for a charge paygate does not know", append(fields, zap.String("account", e.Account))...)
	} else {
		w.log.Debug("processor event", fields...)
	}
	return false, nil
}

// WebhookReaperArgs are the (empty) arguments of the periodic job that deletes the event ids
// older than WebhookEventRetention.
type WebhookReaperArgs struct{}

// Kind implements river.JobArgs.
func (WebhookReaperArgs) Kind() string { return "reap_webhook_events" }

type webhookReaper struct {
	river.WorkerDefaults[WebhookReaperArgs]
	w *Webhooks
}

func (r *webhookReaper) Work(ctx context.Context, _ *river.Job[WebhookReaperArgs]) error {
	n, err := r.w.store.ReapWebhookEvents(ctx, WebhookEventRetention)
	if err != nil {
		return err
	}
	if n > 0 {
		r.w.log.Info("reaped webhook event ids", zap.Int64("deleted", n))
	}
	return nil
}

// AddReaper registers on reg the hourly job that deletes the event ids older than
// WebhookEventRetention.
func (w *Webhooks) AddReaper(reg *jobs.Registry) error {
	if err := jobs.Add(reg, &webhookReaper{w: w}, jobs.Retryable(3)); err != nil {
		return err
	}
	return reg.Every(time.Hour, WebhookReaperArgs{}, false)
}
