package telemetry

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/version"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// metrics are the daemon's Prometheus series (see series.go). Every
// label takes a bounded set of values: no ticket id, URL, key or free
// text ever becomes a label.
type metrics struct {
	cycles        *vec[value]
	cycleDuration *histogram
	cycleLag      *histogram
	apiRequests   *vec[value]
	apiDuration   *vec[histogram]
	mirrored      *vec[value]
	errors        *vec[value]
	tickets       *vec[value]
	retired       *value
	journal       *vec[value]
	stateBytes    *value
	lastSuccess   *value
	lastCycle     *value
	ready         *value
	detect        *vec[value]
	reconcile     *vec[value]
	held          *value
	setAside      *value
	setAsideTotal *value
}

// Label values.
const (
	dirToHelpdesk = "to_helpdesk"
	dirToAPI      = "to_api"

	errKindTicket       = "ticket"           // a ticket or journal entry failed; it is retried with backoff
	errKindRefused      = "refused"          // a journal entry was refused for good
	errKindKeyRefused   = "key_refused"      // a cycle stopped: the API refused the key (401)
	errKindMissingRight = "missing_right"    // a cycle stopped: the key lacks a right (403)
	errKindAPIDown      = "api_down"         // a cycle failed: no API call succeeded
	errKindHelpdesk     = "helpdesk_refused" // a cycle stopped: the helpdesk refused the credentials (401/403)
	errKindState        = "state"            // a cycle stopped: the state file belongs to another adapter
	errKindCanceled     = "canceled"         // a cycle was cut short by the daemon stopping
	errKindCycle        = "cycle"            // a cycle stopped for another reason
)

var errorKinds = []string{errKindTicket, errKindRefused, errKindKeyRefused, errKindMissingRight, errKindAPIDown, errKindHelpdesk, errKindState, errKindCanceled, errKindCycle}

// The series' descriptions, shared by every hotel's metrics, each from
// the options client_golang would take for it (which the monitoring
// tests read for the names the daemon exports), and the histograms'
// buckets.
var (
	cyclesDesc = optsDesc(prometheus.Opts(prometheus.CounterOpts{Name: "ticketbridge_cycles_total",
		Help: "Sync cycles run, by outcome: ok, partial (some tickets failed, the rest went on) or failed (the cycle stopped)."}), "outcome")
	cycleDurationDesc, cycleDurationBuckets = histogramDesc(prometheus.HistogramOpts{Name: "ticketbridge_cycle_duration_seconds",
		Help:    "How long sync cycles took.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200}})
	cycleLagDesc, cycleLagBuckets = histogramDesc(prometheus.HistogramOpts{Name: "ticketbridge_cycle_lag_seconds",
		Help:    "How long after its scheduled start each sync cycle ended (for the first cycle: after the daemon or hotel started): its duration plus any wait for its turn. A tick skipped because the previous cycle still ran counts from that tick into the next cycle's lag.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 30, 60, 120, 300, 600, 1200}})
	apiRequestsDesc = optsDesc(prometheus.Opts(prometheus.CounterOpts{Name: "ticketbridge_api_requests_total",
		Help: "HTTP requests to the Guest Requests API, by endpoint (a path template such as /tickets/{id}/messages), method and status code (\"error\" when no answer came)."}), "endpoint", "method", "code")
	apiDurationDesc, apiDurationBuckets = histogramDesc(prometheus.HistogramOpts{Name: "ticketbridge_api_request_duration_seconds",
		Help:    "How long requests to the Guest Requests API took until their answer's headers, by endpoint.",
		Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}}, "endpoint")
	mirroredDesc = optsDesc(prometheus.Opts(prometheus.CounterOpts{Name: "ticketbridge_messages_mirrored_total",
		Help: "Messages carried across, by direction: to_helpdesk counts guest and staff messages appended to the helpdesk; to_api counts the helpdesk's replies, notes and status changes confirmed by the API."}), "direction")
	errorsDesc = optsDesc(prometheus.Opts(prometheus.CounterOpts{Name: "ticketbridge_errors_total",
		Help: "Errors by kind: ticket (a ticket or outbound entry failed and is retried), refused (an outbound entry was refused for good), key_refused, missing_right, api_down (no API call of a cycle succeeded), helpdesk_refused (the helpdesk refused the credentials), state, canceled, cycle (a cycle stopped)."}), "kind")
	ticketsDesc = optsDesc(prometheus.Opts(prometheus.GaugeOpts{Name: "ticketbridge_tickets",
		Help: "Tickets in the state file by the last upstream status seen (unknown: never read yet; other: a status this version does not know), retired ones included."}), "status")
	retiredDesc = optsDesc(prometheus.Opts(prometheus.GaugeOpts{Name: "ticketbridge_tickets_retired",
		Help: "Tickets closed long enough to be read no more."}))
	journalDesc = optsDesc(prometheus.Opts(prometheus.GaugeOpts{Name: "ticketbridge_journal_entries",
		Help: "Outbound journal entries by state: pending (the backlog to send upstream), failed (refused for good), unmarked (sent, not yet recorded in the helpdesk), abandoned (set aside by an operator: never sent)."}), "state")
	stateBytesDesc = optsDesc(prometheus.Opts(prometheus.GaugeOpts{Name: "ticketbridge_state_file_bytes",
		Help: "Size of the state file; 0 when the state is in PostgreSQL."}))
	lastSuccessDesc = optsDesc(prometheus.Opts(prometheus.GaugeOpts{Name: "ticketbridge_last_success_timestamp_seconds",
		Help: "When the last cycle that synced (ok or partial, with at least one successful API call) ended, as a Unix time; 0 before the first."}))
	lastCycleDesc = optsDesc(prometheus.Opts(prometheus.GaugeOpts{Name: "ticketbridge_last_cycle_timestamp_seconds",
		Help: "When the last cycle ended, whatever its outcome, as a Unix time; 0 before the first."}))
	readyDesc = optsDesc(prometheus.Opts(prometheus.GaugeOpts{Name: "ticketbridge_ready",
		Help: "1 while /readyz answers 200, else 0."}))
	detectDesc = optsDesc(prometheus.Opts(prometheus.CounterOpts{Name: "ticketbridge_ticket_reads_total",
		Help: "How tickets came to be read, by cause: signalled (a list showed the ticket changed), unsignalled (a read found a change no list showed: the API did not move updated_at, and the full-read interval shortens), throttled (a read answered with 429, put off)."}), "cause")
	heldDesc = optsDesc(prometheus.Opts(prometheus.GaugeOpts{Name: "ticketbridge_helpdesk_held_changes",
		Help: "Changes the helpdesk holds until its team acts (such as a field required before a ticket may be solved), as the adapter last saw them; each is tried again every few minutes."}))
	setAsideDesc = optsDesc(prometheus.Opts(prometheus.GaugeOpts{Name: "ticketbridge_outbox_failed_files",
		Help: "Files the team handed the helpdesk (the files helpdesk's outbox) that could not be used and wait in outbox/failed/, as the adapter last saw them; nothing of them is sent until they are fixed and dropped again."}))
	setAsideTotalDesc = optsDesc(prometheus.Opts(prometheus.CounterOpts{Name: "ticketbridge_outbox_failed_total",
		Help: "Files the team handed the helpdesk (the files helpdesk's outbox) that could not be used and were set aside in outbox/failed/."}))
	reconcileDesc = optsDesc(prometheus.Opts(prometheus.CounterOpts{Name: "ticketbridge_reconcile_total",
		Help: "Reconciles of both sides against their last agreed status, by outcome; appended and journaled count the messages and events they repaired."}), "outcome")
)

// optsDesc returns the description of a counter or gauge of o with the
// label names labels.
func optsDesc(o prometheus.Opts, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(o.Name, o.Help, labels, nil)
}

// histogramDesc returns the description of a histogram of o with the
// label names labels, and its buckets.
func histogramDesc(o prometheus.HistogramOpts, labels ...string) (*prometheus.Desc, []float64) {
	return prometheus.NewDesc(o.Name, o.Help, labels, nil), o.Buckets
}

// newMetrics returns a hotel's series, registered with reg.
func newMetrics(reg prometheus.Registerer) metrics {
	m := metrics{
		cycles:        newVec(newValue),
		cycleDuration: newHistogram(cycleDurationBuckets),
		cycleLag:      newHistogram(cycleLagBuckets),
		apiRequests:   newVec(newValue),
		apiDuration:   newVec(func() *histogram { return newHistogram(apiDurationBuckets) }),
		mirrored:      newVec(newValue),
		errors:        newVec(newValue),
		tickets:       newVec(newValue),
		retired:       newValue(),
		journal:       newVec(newValue),
		stateBytes:    newValue(),
		lastSuccess:   newValue(),
		lastCycle:     newValue(),
		ready:         newValue(),
		detect:        newVec(newValue),
		held:          newValue(),
		setAside:      newValue(),
		setAsideTotal: newValue(),
		reconcile:     newVec(newValue),
	}
	reg.MustRegister(m)

	// Series that exist from the start, so that rate() and alerts see a
	// zero before the first event.
	for _, o := range []string{sync.OutcomeOK, sync.OutcomePartial, sync.OutcomePutOff, sync.OutcomeFailed} {
		m.cycles.WithLabelValues(o)
	}
	for _, d := range []string{dirToHelpdesk, dirToAPI} {
		m.mirrored.WithLabelValues(d)
	}
	for _, k := range errorKinds {
		m.errors.WithLabelValues(k)
	}
	for _, c := range []string{"signalled", "unsignalled", "throttled"} {
		m.detect.WithLabelValues(c)
	}
	for _, o := range sync.ReconcileOutcomes {
		m.reconcile.WithLabelValues(o)
	}
	for _, s := range []string{"pending", "failed", "unmarked", "abandoned"} {
		m.journal.WithLabelValues(s)
	}
	return m
}

// Describe implements prometheus.Collector.
func (m metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{cyclesDesc, cycleDurationDesc, cycleLagDesc, apiRequestsDesc, apiDurationDesc, mirroredDesc, errorsDesc, ticketsDesc, retiredDesc, journalDesc, stateBytesDesc, lastSuccessDesc, lastCycleDesc, readyDesc, detectDesc, heldDesc, setAsideDesc, setAsideTotalDesc, reconcileDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: every series as it is now.
func (m metrics) Collect(ch chan<- prometheus.Metric) {
	m.cycles.each(func(l []string, v *value) {
		ch <- prometheus.MustNewConstMetric(cyclesDesc, prometheus.CounterValue, v.get(), l...)
	})
	ch <- m.cycleDuration.metric(cycleDurationDesc)
	ch <- m.cycleLag.metric(cycleLagDesc)
	m.apiRequests.each(func(l []string, v *value) {
		ch <- prometheus.MustNewConstMetric(apiRequestsDesc, prometheus.CounterValue, v.get(), l...)
	})
	m.apiDuration.each(func(l []string, h *histogram) { ch <- h.metric(apiDurationDesc, l...) })
	m.mirrored.each(func(l []string, v *value) {
		ch <- prometheus.MustNewConstMetric(mirroredDesc, prometheus.CounterValue, v.get(), l...)
	})
	m.errors.each(func(l []string, v *value) {
		ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.CounterValue, v.get(), l...)
	})
	m.tickets.each(func(l []string, v *value) {
		ch <- prometheus.MustNewConstMetric(ticketsDesc, prometheus.GaugeValue, v.get(), l...)
	})
	ch <- prometheus.MustNewConstMetric(retiredDesc, prometheus.GaugeValue, m.retired.get())
	m.journal.each(func(l []string, v *value) {
		ch <- prometheus.MustNewConstMetric(journalDesc, prometheus.GaugeValue, v.get(), l...)
	})
	ch <- prometheus.MustNewConstMetric(stateBytesDesc, prometheus.GaugeValue, m.stateBytes.get())
	ch <- prometheus.MustNewConstMetric(lastSuccessDesc, prometheus.GaugeValue, m.lastSuccess.get())
	ch <- prometheus.MustNewConstMetric(lastCycleDesc, prometheus.GaugeValue, m.lastCycle.get())
	ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, m.ready.get())
	m.detect.each(func(l []string, v *value) {
		ch <- prometheus.MustNewConstMetric(detectDesc, prometheus.CounterValue, v.get(), l...)
	})
	ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, m.held.get())
	ch <- prometheus.MustNewConstMetric(setAsideDesc, prometheus.GaugeValue, m.setAside.get())
	ch <- prometheus.MustNewConstMetric(setAsideTotalDesc, prometheus.CounterValue, m.setAsideTotal.get())
	m.reconcile.each(func(l []string, v *value) {
		ch <- prometheus.MustNewConstMetric(reconcileDesc, prometheus.CounterValue, v.get(), l...)
	})
}

// registerProcessMetrics registers the series of the process, which a
// daemon of many hotels has once: the build, the Go runtime, the process.
func registerProcessMetrics(reg prometheus.Registerer) {
	v, c, g := version.Get()
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "ticketbridge_build_info",
		Help:        "Always 1; the labels say which build runs.",
		ConstLabels: prometheus.Labels{"version": v, "commit": c, "goversion": g},
	})
	info.Set(1)
	reg.MustRegister(info, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// errorKind names the kind of error that stopped a cycle.
func errorKind(err error) string {
	switch {
	case errors.Is(err, sync.ErrKeyRefused), errors.Is(err, guestapi.ErrUnauthorized):
		return errKindKeyRefused
	case errors.Is(err, sync.ErrMissingRight), errors.Is(err, guestapi.ErrForbidden):
		return errKindMissingRight
	case errors.Is(err, sync.ErrNoAPISuccess):
		return errKindAPIDown
	case errors.Is(err, sync.ErrHelpdeskRefused), errors.Is(err, adapters.ErrAuth):
		return errKindHelpdesk
	case errors.Is(err, sync.ErrAdapterMismatch), errors.Is(err, state.ErrLocked),
		errors.Is(err, state.ErrReadOnly), errors.Is(err, state.ErrNewerSchema):
		return errKindState
	case errors.Is(err, context.Canceled):
		return errKindCanceled
	}
	return errKindCycle
}
