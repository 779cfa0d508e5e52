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
	fullLists     *value
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

// The series' families, shared by every hotel's metrics, each from the
// options client_golang would take for it (which the monitoring tests
// read for the names the daemon exports).
var (
	cyclesFamily = counterFamily(prometheus.CounterOpts{Name: "ticketbridge_cycles_total",
		Help: "Sync cycles run, by outcome: ok, partial (some tickets failed, the rest went on) or failed (the cycle stopped)."}, "outcome")
	cycleDurationFamily = histogramFamily(prometheus.HistogramOpts{Name: "ticketbridge_cycle_duration_seconds",
		Help:    "How long sync cycles took.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200}})
	cycleLagFamily = histogramFamily(prometheus.HistogramOpts{Name: "ticketbridge_cycle_lag_seconds",
		Help:    "How long after its scheduled start each sync cycle ended (for the first cycle: after the daemon or hotel started): its duration plus any wait for its turn. A tick skipped because the previous cycle still ran counts from that tick into the next cycle's lag.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 30, 60, 120, 300, 600, 1200}})
	apiRequestsFamily = counterFamily(prometheus.CounterOpts{Name: "ticketbridge_api_requests_total",
		Help: "HTTP requests to the Guest Requests API, by endpoint (a path template such as /tickets/{id}/messages), method and status code (\"error\" when no answer came)."}, "endpoint", "method", "code")
	apiDurationFamily = histogramFamily(prometheus.HistogramOpts{Name: "ticketbridge_api_request_duration_seconds",
		Help:    "How long requests to the Guest Requests API took until their answer's headers, by endpoint.",
		Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}}, "endpoint")
	mirroredFamily = counterFamily(prometheus.CounterOpts{Name: "ticketbridge_messages_mirrored_total",
		Help: "Messages carried across, by direction: to_helpdesk counts guest and staff messages appended to the helpdesk; to_api counts the helpdesk's replies, notes and status changes confirmed by the API."}, "direction")
	errorsFamily = counterFamily(prometheus.CounterOpts{Name: "ticketbridge_errors_total",
		Help: "Errors by kind: ticket (a ticket or outbound entry failed and is retried), refused (an outbound entry was refused for good), key_refused, missing_right, api_down (no API call of a cycle succeeded), helpdesk_refused (the helpdesk refused the credentials), state, canceled, cycle (a cycle stopped)."}, "kind")
	ticketsFamily = gaugeFamily(prometheus.GaugeOpts{Name: "ticketbridge_tickets",
		Help: "Tickets in the state file by the last upstream status seen (unknown: never read yet; other: a status this version does not know), retired ones included."}, "status")
	retiredFamily = gaugeFamily(prometheus.GaugeOpts{Name: "ticketbridge_tickets_retired",
		Help: "Tickets closed long enough to be read no more."})
	journalFamily = gaugeFamily(prometheus.GaugeOpts{Name: "ticketbridge_journal_entries",
		Help: "Outbound journal entries by state: pending (the backlog to send upstream), failed (refused for good), unmarked (sent, not yet recorded in the helpdesk), abandoned (set aside by an operator: never sent)."}, "state")
	stateBytesFamily = gaugeFamily(prometheus.GaugeOpts{Name: "ticketbridge_state_file_bytes",
		Help: "Size of the state file; 0 when the state is in PostgreSQL."})
	lastSuccessFamily = gaugeFamily(prometheus.GaugeOpts{Name: "ticketbridge_last_success_timestamp_seconds",
		Help: "When the last cycle that synced (ok or partial, with at least one successful API call) ended, as a Unix time; 0 before the first."})
	lastCycleFamily = gaugeFamily(prometheus.GaugeOpts{Name: "ticketbridge_last_cycle_timestamp_seconds",
		Help: "When the last cycle ended, whatever its outcome, as a Unix time; 0 before the first."})
	readyFamily = gaugeFamily(prometheus.GaugeOpts{Name: "ticketbridge_ready",
		Help: "1 while /readyz answers 200, else 0."})
	detectFamily = counterFamily(prometheus.CounterOpts{Name: "ticketbridge_ticket_reads_total",
		Help: "How tickets came to be read, by cause: signalled (a list showed the ticket changed), unsignalled (a read found a change no list showed: the API did not move updated_at, and the full-read interval shortens), throttled (a read answered with 429, put off)."}, "cause")
	heldFamily = gaugeFamily(prometheus.GaugeOpts{Name: "ticketbridge_helpdesk_held_changes",
		Help: "Changes the helpdesk holds until its team acts (such as a field required before a ticket may be solved), as the adapter last saw them; each is tried again every few minutes."})
	setAsideFamily = gaugeFamily(prometheus.GaugeOpts{Name: "ticketbridge_outbox_failed_files",
		Help: "Files the team handed the helpdesk (the files helpdesk's outbox) that could not be used and wait in outbox/failed/, as the adapter last saw them; nothing of them is sent until they are fixed and dropped again."})
	setAsideTotalFamily = counterFamily(prometheus.CounterOpts{Name: "ticketbridge_outbox_failed_total",
		Help: "Files the team handed the helpdesk (the files helpdesk's outbox) that could not be used and were set aside in outbox/failed/."})
	// One series, no label: which status and department each full list
	// is, status, check, the status page and the log say. Department
	// codes are the API's strings, a set no one bounds in advance.
	fullListsFamily = gaugeFamily(prometheus.GaugeOpts{Name: "ticketbridge_full_lists",
		Help: "Lists of the Guest Requests API that held 200 requests, the most it shows, when the queue was last listed: requests of that status and department older than the 200th newest are not discovered until newer ones leave the status (the API has no paging). ticketbridge status names each list."})
	reconcileFamily = counterFamily(prometheus.CounterOpts{Name: "ticketbridge_reconcile_total",
		Help: "Reconciles of both sides against their last agreed status, by outcome; appended and journaled count the messages and events they repaired."}, "outcome")
)

// newMetrics returns a hotel's series, which the daemon's /metrics reads
// (see exposition).
func newMetrics() metrics {
	m := metrics{
		cycles:        newVec(newValue),
		cycleDuration: newHistogram(cycleDurationFamily.buckets),
		cycleLag:      newHistogram(cycleLagFamily.buckets),
		apiRequests:   newVec(newValue),
		apiDuration:   newVec(func() *histogram { return newHistogram(apiDurationFamily.buckets) }),
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
		fullLists:     newValue(),
		reconcile:     newVec(newValue),
	}

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

// metricsFamilies are the families of metrics, each with how to visit
// its series; propagationFamily is the one family a hotel has beyond them.
var metricsFamilies = []struct {
	f    *family
	each func(m metrics, fn func(sample))
}{
	{cyclesFamily, func(m metrics, fn func(sample)) { eachValue(m.cycles, fn) }},
	{cycleDurationFamily, func(m metrics, fn func(sample)) { fn(m.cycleDuration.sample(nil)) }},
	{cycleLagFamily, func(m metrics, fn func(sample)) { fn(m.cycleLag.sample(nil)) }},
	{apiRequestsFamily, func(m metrics, fn func(sample)) { eachValue(m.apiRequests, fn) }},
	{apiDurationFamily, func(m metrics, fn func(sample)) {
		m.apiDuration.each(func(l []string, h *histogram) { fn(h.sample(l)) })
	}},
	{mirroredFamily, func(m metrics, fn func(sample)) { eachValue(m.mirrored, fn) }},
	{errorsFamily, func(m metrics, fn func(sample)) { eachValue(m.errors, fn) }},
	{ticketsFamily, func(m metrics, fn func(sample)) { eachValue(m.tickets, fn) }},
	{retiredFamily, func(m metrics, fn func(sample)) { fn(sample{value: m.retired.get()}) }},
	{journalFamily, func(m metrics, fn func(sample)) { eachValue(m.journal, fn) }},
	{stateBytesFamily, func(m metrics, fn func(sample)) { fn(sample{value: m.stateBytes.get()}) }},
	{lastSuccessFamily, func(m metrics, fn func(sample)) { fn(sample{value: m.lastSuccess.get()}) }},
	{lastCycleFamily, func(m metrics, fn func(sample)) { fn(sample{value: m.lastCycle.get()}) }},
	{readyFamily, func(m metrics, fn func(sample)) { fn(sample{value: m.ready.get()}) }},
	{detectFamily, func(m metrics, fn func(sample)) { eachValue(m.detect, fn) }},
	{heldFamily, func(m metrics, fn func(sample)) { fn(sample{value: m.held.get()}) }},
	{setAsideFamily, func(m metrics, fn func(sample)) { fn(sample{value: m.setAside.get()}) }},
	{setAsideTotalFamily, func(m metrics, fn func(sample)) { fn(sample{value: m.setAsideTotal.get()}) }},
	{reconcileFamily, func(m metrics, fn func(sample)) { eachValue(m.reconcile, fn) }},
	{fullListsFamily, func(m metrics, fn func(sample)) { fn(sample{value: m.fullLists.get()}) }},
}

// eachValue calls fn with each series of a counter's or gauge's vector.
func eachValue(v *vec[value], fn func(sample)) {
	v.each(func(l []string, c *value) { fn(sample{labels: l, value: c.get()}) })
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
