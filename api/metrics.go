package api

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/runs"
	"github.com/prometheus/client_golang/prometheus"
)

// apiMetrics are the HTTP API's series. A nil *apiMetrics records nothing.
type apiMetrics struct {
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	firstToken *prometheus.HistogramVec
	streams    *prometheus.GaugeVec
	queue      prometheus.Gauge
	queueWait  *prometheus.HistogramVec
}

// queueBuckets reach from a start that waited behind a few others to one
// that waited out LONGHAUL_ADMISSION_WAIT.
var queueBuckets = []float64{0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// durationBuckets reach from a quick read to a long answer.
var durationBuckets = []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// newAPIMetrics registers the API's series with reg, and the gauge of
// runs waiting for a person, which asks Temporal's visibility when
// scraped (so every API process reports the cluster's count).
func (s *Server) newAPIMetrics(reg prometheus.Registerer) *apiMetrics {
	m := &apiMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "longhaul_http_requests_total",
			Help: "HTTP requests answered, by route, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "longhaul_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request; a stream's lasts until the stream ends.",
			Buckets: durationBuckets,
		}, []string{"route", "method"}),
		firstToken: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "longhaul_chat_time_to_first_token_seconds",
			Help:    "Time from a streamed chat request to the first text of its answer, by model (agent).",
			Buckets: durationBuckets,
		}, []string{"model"}),
		streams: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "longhaul_open_streams",
			Help: "Event streams this API process holds open, by kind (chat, runs).",
		}, []string{"kind"}),
		queue: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "longhaul_admission_queue_depth",
			Help: "Run starts waiting in this API process's admission queue (LONGHAUL_ADMISSION_CONCURRENCY starts go at once).",
		}),
		queueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "longhaul_admission_wait_seconds",
			Help:    "Time a run start waited in the admission queue, by outcome: admitted, or refused (429: the queue was full, the wait too long, or the client left).",
			Buckets: queueBuckets,
		}, []string{"outcome"}),
	}
	waiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "longhaul_runs_waiting",
		Help: "Runs waiting for a person (a tool approval or a reply), from Temporal's visibility; -1 when it cannot be read.",
	}, s.countWaiting)
	reg.MustRegister(m.requests, m.duration, m.firstToken, m.streams, m.queue, m.queueWait, waiting)
	return m
}

// countWaiting counts the runs of the namespace that wait for a person.
func (s *Server) countWaiting() float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := s.runs.Count(ctx, runs.Filter{AllOwners: true, Status: contract.StatusWaiting})
	if err != nil {
		return -1
	}
	return float64(n)
}

// request records an answered request; a stream's duration is recorded
// when it ends (streamOpened).
func (m *apiMetrics) request(route, method string, code int, d time.Duration, stream bool) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(code)).Inc()
	if !stream {
		m.duration.WithLabelValues(route, method).Observe(d.Seconds())
	}
}

// streamOpened counts an open stream of kind and returns what ends it:
// the stream's duration is recorded then.
func (m *apiMetrics) streamOpened(c *fiber.Ctx, kind string) func() {
	if m == nil {
		return func() {}
	}
	route, method := routeOf(c), strings.Clone(c.Method())
	start := c.Context().Time()
	m.streams.WithLabelValues(kind).Inc()
	return func() {
		m.streams.WithLabelValues(kind).Dec()
		m.duration.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
	}
}

// firstText records the time to a streamed chat's first text.
func (m *apiMetrics) firstText(model string, start time.Time) {
	if m != nil {
		m.firstToken.WithLabelValues(model).Observe(time.Since(start).Seconds())
	}
}

// admissionWait records a start's wait in the admission queue.
func (m *apiMetrics) admissionWait(d time.Duration, admitted bool) {
	outcome := "refused"
	if admitted {
		outcome = "admitted"
	}
	m.queueWait.WithLabelValues(outcome).Observe(d.Seconds())
}

// admissionDepth records the admission queue's length.
func (m *apiMetrics) admissionDepth(n int) { m.queue.Set(float64(n)) }
