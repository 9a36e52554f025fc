package event

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"go.uber.org/zap"

	"github.com/paygate/paygate/jobs"
	"github.com/paygate/paygate/retry"
)

// DeliveryArgs is the job that delivers one event to one endpoint: unique per pair, so that
// the dispatcher, looking at the same events again, enqueues it once.
type DeliveryArgs struct {
	EventID    string `json:"event_id" river:"unique"`
	EndpointID string `json:"endpoint_id" river:"unique"`
	MerchantID string `json:"merchant_id"`
	// Created is when the event happened (Unix seconds): the age of the oldest undelivered
	// event is read from it.
	Created int64 `json:"created"`
}

// Kind implements river.JobArgs.
func (DeliveryArgs) Kind() string { return "event_delivery" }

// deliveryAttempts bounds River's runs of one delivery: a failed try snoozes the job (it
// spends no run); a run counts only when its replica died mid-try, or at the last try.
const deliveryAttempts = 25

// DelivererConfig configures a Deliverer.
type DelivererConfig struct {
	Store    Store
	Render   Renderer
	Schedule Schedule
	// AllowHTTP allows deliveries to loopback addresses (PAYGATE_WEBHOOK_ALLOW_HTTP=1).
	AllowHTTP bool
	// Client, when set, sends the deliveries instead of the default client (which follows
	// no redirect and dials only allowed addresses).
	Client  *http.Client
	Now     func() time.Time
	Metrics *Metrics
	Log     *zap.Logger
}

// Deliverer tries deliveries: the worker of DeliveryArgs.
type Deliverer struct {
	cfg    DelivererConfig
	client *http.Client
}

// NewDeliverer returns the deliverer of cfg.
func NewDeliverer(cfg DelivererConfig) *Deliverer {
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Schedule == (Schedule{}) {
		cfg.Schedule = DefaultSchedule()
	}
	client := cfg.Client
	if client == nil {
		dialer := Dialer(cfg.AllowHTTP)
		client = &http.Client{
			Transport: &http.Transport{
				DialContext:           dialer.DialContext,
				Proxy:                 nil, // a proxy would dial for us, past the address check
				TLSHandshakeTimeout:   cfg.Schedule.Timeout,
				ResponseHeaderTimeout: cfg.Schedule.Timeout,
				MaxIdleConnsPerHost:   4,
				IdleConnTimeout:       90 * time.Second,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return &Deliverer{cfg: cfg, client: client}
}

// Register adds the delivery job to reg.
func (d *Deliverer) Register(reg *jobs.Registry) error {
	return jobs.Add(reg, &deliveryWorker{d: d}, jobs.Retryable(deliveryAttempts))
}

// Outcome is what one try found.
type Outcome struct {
	HTTPStatus int
	Duration   time.Duration
	Err        error
	RetryAfter time.Duration
}

// Try posts body, the event id's, to url signed with secrets at now, within the schedule's
// timeout. A redirect is an answer like any other non-2xx one: never followed.
func (d *Deliverer) Try(ctx context.Context, url, eventID string, body []byte, secrets []string, now time.Time) Outcome {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Schedule.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Outcome{Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "paygate-webhooks/1")
	req.Header.Set(EventIDHeader, eventID)
	req.Header.Set(SignatureHeader, Sign(body, now, secrets...))
	start := time.Now()
	resp, err := d.client.Do(req)
	if err != nil {
		return Outcome{Duration: time.Since(start), Err: err}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	o := Outcome{HTTPStatus: resp.StatusCode, Duration: time.Since(start)}
	if v := resp.Header.Get("Retry-After"); v != "" && !Delivered(resp.StatusCode) {
		if wait, err := retry.ParseRetryAfter(v, resp.Header.Get("Date"), time.Now(), time.Minute); err == nil {
			o.RetryAfter = wait
		}
	}
	return o
}

type deliveryWorker struct {
	river.WorkerDefaults[DeliveryArgs]
	d *Deliverer
}

// Work tries the delivery once. A failure with time left in the window snoozes the job
// until the next try; the last failure leaves the job discarded: a dead letter, replayable,
// whose replay starts a new window.
func (w *deliveryWorker) Work(ctx context.Context, job *river.Job[DeliveryArgs]) error {
	d, a := w.d, job.Args
	ev, err := d.cfg.Store.EventByID(ctx, a.MerchantID, a.EventID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	ep, err := d.cfg.Store.EndpointByID(ctx, a.MerchantID, a.EndpointID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if ep.DeletedAt != nil || ep.DisabledAt != nil {
		d.cfg.Metrics.result("skipped")
		return nil // the endpoint is gone or disabled: nothing is sent to it any more
	}
	object, err := d.cfg.Render(ctx, a.MerchantID, ev.ChargeID)
	if err != nil {
		return fmt.Errorf("event: render %s: %w", ev.ID, err)
	}
	body, err := Body(ev, object)
	if err != nil {
		return err
	}
	now := d.cfg.Now()
	o := d.Try(ctx, ep.URL, ev.ID, body, ep.Secrets(now), now)
	rec := Delivery{EventID: ev.ID, EndpointID: ep.ID, At: now, HTTPStatus: o.HTTPStatus,
		DurationMS: o.Duration.Milliseconds(), Delivered: o.Err == nil && Delivered(o.HTTPStatus)}
	var plan Retry
	if !rec.Delivered {
		rec.Error = failure(o)
		start := windowStart(job)
		prior, err := d.cfg.Store.Tries(ctx, ev.ID, ep.ID, start)
		if err != nil {
			return err
		}
		plan = d.cfg.Schedule.Next(prior+1, start, now, o.RetryAfter, nil)
		if !plan.Dead {
			next := now.Add(plan.Delay)
			rec.NextRetry = &next
		}
	}
	// The record is written with what it plans, before the job is snoozed or discarded:
	// a replica that dies between the two tries again, and the record shows both tries.
	n, disabled, err := d.cfg.Store.RecordDelivery(context.WithoutCancel(ctx), rec, d.cfg.Schedule.DisableAfter)
	if err != nil {
		return fmt.Errorf("event: record delivery of %s to %s: %w", ev.ID, ep.ID, err)
	}
	log := d.cfg.Log.With(zap.String("event_id", ev.ID), zap.String("endpoint_id", ep.ID), zap.Int("attempt", n),
		zap.Int("http_status", o.HTTPStatus), zap.Int64("duration_ms", rec.DurationMS))
	switch {
	case rec.Delivered:
		d.cfg.Metrics.result("delivered")
		log.Debug("event delivered")
		return nil
	case disabled:
		d.cfg.Metrics.result("disabled")
		log.Warn("endpoint disabled: every delivery failed for the disable window", zap.String("error", rec.Error))
		return nil
	case plan.Dead:
		d.cfg.Metrics.result("dead")
		log.Warn("delivery dead: its window ended", zap.String("error", rec.Error))
		// The job's last run: River discards a job whose runs are spent, into the dead
		// letters, with this error.
		job.MaxAttempts = job.Attempt
		return fmt.Errorf("event: delivery of %s to %s failed for %s, last: %s", ev.ID, ep.ID, d.cfg.Schedule.Window, rec.Error)
	}
	d.cfg.Metrics.result("failed")
	log.Info("delivery failed; retrying", zap.String("error", rec.Error), zap.Duration("retry_in", plan.Delay))
	return river.JobSnooze(plan.Delay)
}

// failure says in a few words why try o failed.
func failure(o Outcome) string {
	switch {
	case o.Err != nil:
		msg := o.Err.Error()
		if errors.Is(o.Err, context.DeadlineExceeded) || strings.Contains(msg, "Client.Timeout") {
			return "no answer within the timeout"
		}
		var uerr *URLError
		if errors.As(o.Err, &uerr) {
			return uerr.Message
		}
		return clip(msg, 300)
	case o.HTTPStatus >= 300 && o.HTTPStatus < 400:
		return "answered " + strconv.Itoa(o.HTTPStatus) + ": redirects are not followed"
	}
	return "answered " + strconv.Itoa(o.HTTPStatus)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// windowStart is when the job's retry window began: its creation, or its last replay.
func windowStart(job *river.Job[DeliveryArgs]) time.Time {
	var meta struct {
		Replays []struct {
			At time.Time `json:"at"`
		} `json:"paygate_replays"`
	}
	_ = json.Unmarshal(job.Metadata, &meta) // River's metadata is an object; a stray one starts the window at creation
	if n := len(meta.Replays); n > 0 {
		return meta.Replays[n-1].At
	}
	return job.CreatedAt
}
