package main

import (
	"fmt"
	"slices"
	"strings"
	gosync "sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The telemetry of many hotels. The daemon's telemetry serves the
// endpoints, feeds the watchdog and carries the series of the process;
// each hotel has a telemetry of its own (see [telemetry.hotel]) whose
// series carry a hotel label and whose readiness is the hotel's. A daemon
// of one hotel has no hotel label at all, which PromQL reads as
// hotel="": its series are those it always had.

// hotelBoard is the set of the hotels' telemetries.
type hotelBoard struct {
	mu gosync.Mutex
	// tels holds the running hotels'; broken the reasons of the hotels
	// whose configuration or start failed.
	tels   map[string]*telemetry
	broken map[string]string
	// ready names the hotels /readyz answers for; nil means every hotel.
	ready []string
	// elsewhere holds the hotels another replica syncs (or will), with
	// what /readyz says of them.
	elsewhere map[string]string
}

// hotelsElsewhere sets the hotels other replicas sync: /readyz lists them
// as ready here, saying where they are.
func (t *telemetry) hotelsElsewhere(m map[string]string) {
	t.hotels.mu.Lock()
	defer t.hotels.mu.Unlock()
	t.hotels.elsewhere = m
}

// asFleet makes t the telemetry of a daemon of many hotels: its own
// registry keeps only the process's series, and /readyz answers for the
// hotels named in ready (nil: all).
func (t *telemetry) asFleet(ready []string) {
	t.reg = prometheus.NewRegistry()
	registerProcessMetrics(t.reg)
	t.hotels = &hotelBoard{tels: map[string]*telemetry{}, broken: map[string]string{}, ready: ready}
}

// hotel returns a new telemetry for the hotel name, replacing the one it
// had: a hotel restarted after an edit starts its counters again. Its
// endpoints, watchdog and systemd notifications are the daemon's.
func (t *telemetry) hotel(name string) *telemetry {
	reg := prometheus.NewRegistry()
	wrapped := prometheus.WrapRegistererWith(prometheus.Labels{"hotel": name}, reg)
	prop := newPropagationMetrics()
	wrapped.MustRegister(prop)
	h := &telemetry{
		cfg:           telemetryConfig{CycleMax: t.cfg.CycleMax},
		log:           t.log.With("hotel", name),
		now:           t.now,
		notify:        func(string) error { return nil },
		watchdogEvery: -1,
		reg:           reg,
		m:             newMetrics(wrapped),
		prop:          prop,
	}
	t.hotels.mu.Lock()
	t.hotels.tels[name] = h
	delete(t.hotels.broken, name)
	t.hotels.mu.Unlock()
	return h
}

// dropHotel forgets a hotel that stopped; a non-empty reason keeps it
// listed as failing.
func (t *telemetry) dropHotel(name, reason string) {
	t.hotels.mu.Lock()
	defer t.hotels.mu.Unlock()
	delete(t.hotels.tels, name)
	delete(t.hotels.broken, name)
	if reason != "" {
		t.hotels.broken[name] = reason
	}
}

// gatherer gathers the daemon's series and every hotel's.
func (t *telemetry) gatherer() prometheus.Gatherer {
	if t.hotels == nil {
		return t.reg
	}
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		gs := prometheus.Gatherers{t.reg}
		t.hotels.mu.Lock()
		for _, h := range t.hotels.tels {
			gs = append(gs, h.reg)
		}
		t.hotels.mu.Unlock()
		return gs.Gather()
	})
}

// readiness is what /readyz answers: for one hotel its readiness, for many
// one line per hotel after a first line that says whether every hotel
// /readyz answers for is ready.
func (t *telemetry) readiness(now time.Time) (bool, string) {
	if t.hotels == nil {
		ok, reason := t.ready(now)
		t.m.ready.Set(boolFloat(ok))
		return ok, reason
	}
	b := t.hotels
	b.mu.Lock()
	tels := make(map[string]*telemetry, len(b.tels))
	for n, h := range b.tels {
		tels[n] = h
	}
	broken := make(map[string]string, len(b.broken))
	for n, r := range b.broken {
		broken[n] = r
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
	var lines, failing []string
	for _, n := range names {
		var ok bool
		var reason string
		switch h, running := tels[n]; {
		case running:
			ok, reason = h.ready(now)
			h.m.ready.Set(boolFloat(ok))
		case broken[n] != "":
			reason = "failed to start: " + oneLine(broken[n])
		case elsewhere[n] != "":
			ok, reason = true, "not synced here: "+elsewhere[n]
		default:
			reason = "no such hotel in the hotels directory (named in TICKETBRIDGE_READY_HOTELS)"
		}
		counts := ready == nil || slices.Contains(ready, n)
		mark := "ready"
		if !ok {
			mark = "not ready"
			if counts {
				failing = append(failing, n)
			}
		}
		if !counts {
			mark += " (not in TICKETBRIDGE_READY_HOTELS)"
		}
		lines = append(lines, fmt.Sprintf("hotel %s: %s: %s", n, mark, reason))
	}
	head := fmt.Sprintf("ok: %d hotels", len(names))
	if len(failing) > 0 {
		head = "hotels failing: " + strings.Join(failing, ", ")
	}
	return len(failing) == 0, strings.Join(append([]string{head}, lines...), "\n")
}

// aliveUntil is the earliest instant until which a running hotel counts
// as alive for the watchdog: a hotel whose cycle hangs stops the pings, as
// the one hotel of a single daemon does. With no hotel running the daemon
// counts as alive.
func (b *hotelBoard) aliveUntil(now time.Time, cycleMax time.Duration) time.Time {
	b.mu.Lock()
	tels := make([]*telemetry, 0, len(b.tels))
	for _, h := range b.tels {
		tels = append(tels, h)
	}
	b.mu.Unlock()
	until := now.Add(cycleMax)
	for _, h := range tels {
		if u := h.aliveUntil(); u.Before(until) {
			until = u
		}
	}
	return until
}
