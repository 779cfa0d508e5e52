package telemetry

import (
	"fmt"
	"slices"
	"strings"
	gosync "sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketbridge/ticketbridge/internal/statuspage"
)

// The telemetry of many hotels. The daemon's telemetry serves the
// endpoints, feeds the watchdog and carries the series of the process;
// each hotel has a telemetry of its own (see [Telemetry.Hotel]) whose
// series carry a hotel label and whose readiness is the hotel's. A daemon
// of one hotel has no hotel label at all, which PromQL reads as
// Hotel="": its series are those it always had.

// hotelBoard is the set of the hotels' telemetries.
type hotelBoard struct {
	// one is set in a fleet of one (NewOne): its hotel's series and
	// readiness are the daemon's, with no hotel label. Its hotel keeps one
	// telemetry, hotel, across its restarts (see Telemetry.Hotel);
	// standing is why it stands by, last told to systemd.
	one      bool
	hotel    *Telemetry
	standing string
	mu       gosync.Mutex
	// tels holds the running hotels'; broken the reasons of the hotels
	// whose configuration or start failed.
	tels   map[string]*Telemetry
	broken map[string]string
	// pages holds the status page's source of each hotel that runs
	// (once it started: see fleet.start).
	pages map[string]statuspage.Source
	// ready names the hotels /readyz answers for; nil means every hotel.
	ready []string
	// elsewhere holds the hotels another replica syncs (or will), with
	// what /readyz says of them.
	elsewhere map[string]string
	// panics counts the panics recovered in each hotel's goroutine, on
	// the daemon's registry: it outlives the hotel's own telemetry. Nil
	// in a fleet of one, which ends at a panic.
	panics *prometheus.CounterVec
}

// newHotelBoard returns the board of a daemon of many hotels, its
// series registered on reg.
func newHotelBoard(reg prometheus.Registerer, ready []string) *hotelBoard {
	b := &hotelBoard{tels: map[string]*Telemetry{}, broken: map[string]string{}, pages: map[string]statuspage.Source{}, ready: ready,
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketbridge_hotel_panics_total",
			Help: "Panics recovered in a hotel's cycle, adapter or state; the hotel restarts after a backoff while the others go on.",
		}, []string{"hotel"})}
	reg.MustRegister(b.panics)
	return b
}

// HotelPanicked counts a panic recovered in the hotel name's goroutine.
func (t *Telemetry) HotelPanicked(name string) {
	if t.hotels.panics == nil {
		return
	}
	t.hotels.panics.WithLabelValues(name).Inc()
}

// SetElsewhere sets the hotels other replicas sync: /readyz lists them
// as ready here, saying where they are. A fleet of one whose hotel does
// not run here stands by: it tells systemd it is ready (it runs as it
// should) and why it syncs nothing.
func (t *Telemetry) SetElsewhere(m map[string]string) {
	b := t.hotels
	b.mu.Lock()
	b.elsewhere = m
	var why string
	for n, w := range m {
		if _, running := b.tels[n]; b.one && !running {
			why = w
		}
	}
	changed := why != b.standing
	b.standing = why
	b.mu.Unlock()
	if why != "" && changed {
		t.sendReady()
		t.send("STATUS=standing by: " + why)
	}
}

// Hotel returns a new telemetry for the hotel name, replacing the one it
// had: a hotel restarted after an edit starts its counters again. Its
// endpoints, watchdog and systemd notifications are the daemon's. The
// one hotel of a fleet of one keeps one telemetry across its restarts (a
// secret file changed, the lease taken again), on the daemon's series and
// notifications: its counters, its health and what systemd is told go
// on from its last cycle, as a daemon of one hotel's always did.
func (t *Telemetry) Hotel(name string) *Telemetry {
	b := t.hotels
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.hotel
	switch {
	case h != nil:
		// The one hotel's, started again: its page stays until its
		// previous run closed (HidePage) or this one shows its own.
		b.tels[name] = h
		delete(b.broken, name)
		return h
	case b.one:
		h = &Telemetry{cfg: Options{CycleMax: t.cfg.CycleMax}, log: t.log, notify: t.notify, ready: t.ready, watchdogEvery: -1, m: t.m, prop: t.prop}
		b.hotel = h
	default:
		h = &Telemetry{
			cfg:           Options{CycleMax: t.cfg.CycleMax},
			log:           t.log.With("hotel", name),
			notify:        func(string) error { return nil },
			watchdogEvery: -1,
			m:             newMetrics(), // sent by the daemon's exposition
			prop:          newPropagationMetrics(),
		}
	}
	b.tels[name] = h
	delete(b.broken, name)
	delete(b.pages, name)
	return h
}

// DropHotel forgets a hotel that stopped; a non-empty reason keeps it
// listed as failing.
func (t *Telemetry) DropHotel(name, reason string) {
	t.hotels.mu.Lock()
	defer t.hotels.mu.Unlock()
	delete(t.hotels.tels, name)
	delete(t.hotels.broken, name)
	delete(t.hotels.pages, name)
	if reason != "" {
		t.hotels.broken[name] = reason
	}
}

// ClearBroken forgets why a hotel failed to start here, if it did.
func (t *Telemetry) ClearBroken(name string) {
	t.hotels.mu.Lock()
	defer t.hotels.mu.Unlock()
	delete(t.hotels.broken, name)
}

// hotelSeries returns the series of every hotel running here, in no
// order (each family sorts its series), and whether they carry their
// hotel's label: a daemon of one hotel's are its own, with none.
func (t *Telemetry) hotelSeries() ([]hotelSeries, bool) {
	if t.hotels == nil || t.hotels.one {
		return []hotelSeries{{m: t.m, prop: t.prop}}, false
	}
	t.hotels.mu.Lock()
	defer t.hotels.mu.Unlock()
	hotels := make([]hotelSeries, 0, len(t.hotels.tels))
	for name, h := range t.hotels.tels {
		hotels = append(hotels, hotelSeries{name: name, m: h.m, prop: h.prop})
	}
	return hotels, true
}

// ShowPage lists the hotel name's page source on the status page; the
// Hotel's next start or drop takes it off.
func (t *Telemetry) ShowPage(name string, src statuspage.Source) {
	t.hotels.mu.Lock()
	defer t.hotels.mu.Unlock()
	if _, running := t.hotels.tels[name]; running {
		t.hotels.pages[name] = src
	}
}

// HidePage takes src, the page source of the hotel name, off the status
// page; a source the hotel got since (it started again) stays.
func (t *Telemetry) HidePage(name string, src statuspage.Source) {
	t.hotels.mu.Lock()
	defer t.hotels.mu.Unlock()
	if t.hotels.pages[name] == src {
		delete(t.hotels.pages, name)
	}
}

// hotelReadiness is a hotel's readiness: ok and why, whether it counts
// for /readyz (TICKETBRIDGE_READY_HOTELS), and its page source (nil when
// it does not run).
type hotelReadiness struct {
	name   string
	ok     bool
	reason string
	counts bool
	page   statuspage.Source
}

// judge returns the readiness of each hotel, running, broken, synced by
// another replica or named in TICKETBRIDGE_READY_HOTELS, in name order, and
// sets the ready gauges.
func (b *hotelBoard) judge(now time.Time) []hotelReadiness {
	b.mu.Lock()
	tels := make(map[string]*Telemetry, len(b.tels))
	for n, h := range b.tels {
		tels[n] = h
	}
	broken := make(map[string]string, len(b.broken))
	for n, r := range b.broken {
		broken[n] = r
	}
	pages := make(map[string]statuspage.Source, len(b.pages))
	for n, p := range b.pages {
		pages[n] = p
	}
	ready := b.ready
	elsewhere := b.elsewhere
	b.mu.Unlock()

	names := make([]string, 0, len(tels)+len(broken)+len(elsewhere))
	for n := range tels {
		names = append(names, n)
	}
	for n := range broken {
		names = append(names, n)
	}
	for n := range elsewhere {
		if _, ok := tels[n]; !ok && broken[n] == "" {
			names = append(names, n)
		}
	}
	for _, n := range ready {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	out := make([]hotelReadiness, 0, len(names))
	for _, n := range names {
		hr := hotelReadiness{name: n, counts: ready == nil || slices.Contains(ready, n), page: pages[n]}
		switch h, running := tels[n]; {
		case running:
			hr.ok, hr.reason = h.Ready(now)
			h.m.ready.Set(boolFloat(hr.ok))
		case broken[n] != "":
			hr.reason = "failed to start: " + oneLine(broken[n])
		case elsewhere[n] != "" && b.one:
			// A daemon of one hotel that syncs nothing is not ready.
			hr.reason = "standing by: " + elsewhere[n]
		case elsewhere[n] != "":
			hr.ok, hr.reason = true, "not synced here: "+elsewhere[n]
		default:
			hr.reason = "no such hotel in the hotels directory (named in TICKETBRIDGE_READY_HOTELS)"
		}
		out = append(out, hr)
	}
	return out
}

// Readiness is what /readyz answers: for one hotel its readiness, for many
// one line per hotel after a first line that says whether every hotel
// /readyz answers for is ready.
func (t *Telemetry) Readiness(now time.Time) (bool, string) {
	if t.hotels == nil {
		ok, reason := t.Ready(now)
		t.m.ready.Set(boolFloat(ok))
		return ok, reason
	}
	hs := t.hotels.judge(now)
	if t.hotels.one {
		ok, reason := t.Ready(now) // its hotel not started yet
		if len(hs) > 0 {
			ok, reason = hs[0].ok, hs[0].reason
		}
		t.m.ready.Set(boolFloat(ok))
		return ok, reason
	}
	var lines, failing []string
	for _, h := range hs {
		mark := "ready"
		if !h.ok {
			mark = "not ready"
			if h.counts {
				failing = append(failing, h.name)
			}
		}
		if !h.counts {
			mark += " (not in TICKETBRIDGE_READY_HOTELS)"
		}
		lines = append(lines, fmt.Sprintf("hotel %s: %s: %s", h.name, mark, h.reason))
	}
	head := fmt.Sprintf("ok: %d hotels", len(hs))
	if len(failing) > 0 {
		head = "hotels failing: " + strings.Join(failing, ", ")
	}
	return len(failing) == 0, strings.Join(append([]string{head}, lines...), "\n")
}

// PageHotels lists the hotels on the status page, with the readiness
// /readyz gives them.
func (t *Telemetry) PageHotels() []statuspage.Listed {
	hs := t.hotels.judge(time.Now())
	out := make([]statuspage.Listed, 0, len(hs))
	for _, h := range hs {
		// The list says ready or not itself: "ok: " would repeat it.
		out = append(out, statuspage.Listed{Name: h.name, Source: h.page, Ready: h.ok, Reason: strings.TrimPrefix(h.reason, "ok: ")})
	}
	return out
}

// aliveUntil is the earliest instant until which a running hotel counts
// as alive for the watchdog: a hotel whose cycle hangs stops the pings, as
// the one hotel of a single daemon does. With no hotel running the daemon
// counts as alive.
func (b *hotelBoard) aliveUntil(now time.Time, cycleMax time.Duration) time.Time {
	b.mu.Lock()
	tels := make([]*Telemetry, 0, len(b.tels))
	for _, h := range b.tels {
		tels = append(tels, h)
	}
	b.mu.Unlock()
	until := now.Add(cycleMax)
	for _, h := range tels {
		if u := h.AliveUntil(); u.Before(until) {
			until = u
		}
	}
	return until
}
