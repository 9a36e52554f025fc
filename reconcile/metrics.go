package reconcile

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// StatsSource reads the state of reconciliation (a *store.DB).
type StatsSource interface {
	ReconcileStats(ctx context.Context) (Stats, error)
}

var (
	pendingDesc = prometheus.NewDesc("paygate_pending_charges", "Charges whose outcome is unknown (pending).", nil, nil)
	oldestDesc  = prometheus.NewDesc("paygate_pending_oldest_seconds", "Age of the oldest pending charge.", nil, nil)
	reviewDesc  = prometheus.NewDesc("paygate_review_queue_size", "Charges waiting for a person in the review queue.", nil, nil)
	eventsDesc  = prometheus.NewDesc("paygate_review_events", "Processor events waiting for a person: they name a charge paygate does not have.", nil, nil)
)

// collector reads the reconciliation gauges from the database at each scrape.
type collector struct{ src StatsSource }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- oldestDesc
	ch <- reviewDesc
	ch <- eventsDesc
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := c.src.ReconcileStats(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(pendingDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(s.Pending))
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, s.OldestPending.Seconds())
	ch <- prometheus.MustNewConstMetric(reviewDesc, prometheus.GaugeValue, float64(s.InReview))
	ch <- prometheus.MustNewConstMetric(eventsDesc, prometheus.GaugeValue, float64(s.EventsInReview))
}

// RegisterMetrics registers the reconciliation metrics: the pending count and the oldest
// pending age, the review queue's size and the processor events in review (read at each
// scrape), checks by kind and path, and
// the sweeps with the list pages they read and the checks they recorded.
func (j *Janitor) RegisterMetrics(reg prometheus.Registerer, src StatsSource) error {
	if err := reg.Register(collector{src: src}); err != nil {
		return err
	}
	if err := j.sweeps.register(reg); err != nil {
		return err
	}
	return reg.Register(j.checks)
}
