package jobs

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// metricsTimeout bounds the count a scrape runs.
const metricsTimeout = 2 * time.Second

var deadDesc = prometheus.NewDesc(
	"paygate_jobs_dead",
	"Dead letters: background jobs discarded after their last attempt, kept until replayed or past retention.",
	nil, nil,
)

// deadCollector counts the dead letters on each scrape, so every replica reports the same
// database-wide figure.
type deadCollector struct {
	pool *pgxpool.Pool
	log  *zap.Logger
}

func (c *deadCollector) Describe(ch chan<- *prometheus.Desc) { ch <- deadDesc }

func (c *deadCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), metricsTimeout)
	defer cancel()
	var n int64
	if err := c.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'discarded'`).Scan(&n); err != nil {
		// The gauge is left out of this scrape rather than reported wrong.
		c.log.Warn("count dead letters", zap.Error(err))
		return
	}
	ch <- prometheus.MustNewConstMetric(deadDesc, prometheus.GaugeValue, float64(n))
}

// RegisterMetrics registers the paygate_jobs_dead gauge (the number of dead letters,
// counted on the database at each scrape) with reg. It returns reg's error, for example
// when registered twice.
func (q *Queue) RegisterMetrics(reg prometheus.Registerer) error {
	return reg.Register(&deadCollector{pool: q.pool, log: q.log})
}
