package event

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the deliveries' metrics.
type Metrics struct {
	deliveries *prometheus.CounterVec
}

// OldestFunc returns when the oldest event still undelivered to some endpoint happened;
// zero when every event is delivered.
type OldestFunc func(ctx context.Context) (time.Time, error)

// NewMetrics registers on reg paygate_event_deliveries_total{result} (delivered, failed: a
// try failed and is retried, dead, disabled, skipped: the endpoint is gone) and
// paygate_event_oldest_undelivered_seconds, the age of the oldest event whose delivery is
// still to be made (0: none), read with oldest at each scrape.
func NewMetrics(reg prometheus.Registerer, oldest OldestFunc) (*Metrics, error) {
	m := &Metrics{deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paygate_event_deliveries_total",
		Help: "Tries of delivering an event to a webhook endpoint, by result.",
	}, []string{"result"})}
	for _, r := range []string{"delivered", "failed", "dead", "disabled", "skipped"} {
		m.deliveries.WithLabelValues(r)
	}
	age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "paygate_event_oldest_undelivered_seconds",
		Help: "Age of the oldest event whose delivery to an endpoint is still to be made; 0 when none is.",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		t, err := oldest(ctx)
		if err != nil || t.IsZero() {
			return 0
		}
		return time.Since(t).Seconds()
	})
	for _, c := range []prometheus.Collector{m.deliveries, age} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) result(r string) {
	if m != nil {
		m.deliveries.WithLabelValues(r).Inc()
	}
}
