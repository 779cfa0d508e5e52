package adapters

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

// StatusMap maps statuses both ways between the API and one helpdesk.
// ToHelpdesk must name a helpdesk status for each of the seven upstream
// statuses; FromHelpdesk maps each helpdesk status the adapter reports to a
// settable upstream status. A helpdesk status absent from FromHelpdesk is not
// carried upstream.
type StatusMap struct {
	ToHelpdesk   map[guestapi.Status]string
	FromHelpdesk map[string]guestapi.Status
}

// APIStatusMap maps each upstream status to the word of the same name
// and back for the settable ones, for the helpdesks that speak the API's
// own language (the files folder, the webhook receiver): confirmed is
// shown but cannot be set.
func APIStatusMap() StatusMap {
	m := StatusMap{ToHelpdesk: map[guestapi.Status]string{}, FromHelpdesk: map[string]guestapi.Status{}}
	for _, s := range guestapi.Statuses() {
		m.ToHelpdesk[s] = string(s)
	}
	for _, s := range guestapi.SettableStatuses() {
		m.FromHelpdesk[string(s)] = s
	}
	return m
}

// Override returns a copy of m with the entries of deps' overrides replacing
// its own.
func (m StatusMap) Override(deps Deps) StatusMap {
	out := StatusMap{ToHelpdesk: maps.Clone(m.ToHelpdesk), FromHelpdesk: maps.Clone(m.FromHelpdesk)}
	if out.ToHelpdesk == nil {
		out.ToHelpdesk = map[guestapi.Status]string{}
	}
	if out.FromHelpdesk == nil {
		out.FromHelpdesk = map[string]guestapi.Status{}
	}
	maps.Copy(out.ToHelpdesk, deps.StatusToHelpdesk)
	maps.Copy(out.FromHelpdesk, deps.StatusFromHelpdesk)
	return out
}

// Down returns the helpdesk status for s. An unknown upstream status maps to
// the one of "new"'s neighbour "assigned" when present, else to "new"'s: the
// ticket stays open rather than being closed by a value nobody knows.
func (m StatusMap) Down(s guestapi.Status) string {
	if h, ok := m.ToHelpdesk[s]; ok {
		return h
	}
	if h, ok := m.ToHelpdesk[guestapi.StatusAssigned]; ok {
		return h
	}
	return m.ToHelpdesk[guestapi.StatusNew]
}

// Up returns the upstream status for the helpdesk status h; ok is false
// when h is not mapped.
func (m StatusMap) Up(h string) (s guestapi.Status, ok bool) {
	s, ok = m.FromHelpdesk[h]
	return s, ok
}

// Current returns the [FoundStatus] of a ticket whose helpdesk status is
// cur, changed at at: Up is cur mapped up, and Shows the upstream statuses
// that cur maps up to or that map down to cur (SetStatus writes nothing
// for them).
func (m StatusMap) Current(cur string, at time.Time) FoundStatus {
	return m.CurrentBy(cur, at, func(s guestapi.Status) bool { return m.Down(s) == cur })
}

// CurrentBy is [StatusMap.Current] for a helpdesk whose SetStatus leaves
// more statuses as they are: shows(s) reports whether it writes nothing
// for s on a ticket of status cur.
func (m StatusMap) CurrentBy(cur string, at time.Time, shows func(guestapi.Status) bool) FoundStatus {
	f := FoundStatus{Known: true, At: at}
	f.Up, _ = m.Up(cur)
	for _, s := range guestapi.Statuses() {
		if s == f.Up || shows(s) {
			f.Shows = append(f.Shows, s)
		}
	}
	return f
}

// The variables of the daemon's status mappings, which every adapter's
// default mapping takes (see [StatusMap.Override]).
const (
	StatusToVar   = "TICKETBRIDGE_STATUS_TO_HELPDESK"
	StatusFromVar = "TICKETBRIDGE_STATUS_FROM_HELPDESK"
)

// StatusMapError is the error of a status map that does not parse, naming
// its variable.
type StatusMapError struct {
	Var string
	Err error
}

func (e *StatusMapError) Error() string { return e.Var + ": " + e.Err.Error() }

func (e *StatusMapError) Unwrap() error { return e.Err }

// StatusTo is the setting of [StatusToVar], upstream status to helpdesk
// status, parsed once when read (go-envconfig's Decoder).
type StatusTo map[guestapi.Status]string

// EnvDecode parses s with [ParseStatusPairs]; its error names the variable.
func (m *StatusTo) EnvDecode(s string) error {
	v, err := ParseStatusPairs(s)
	if err != nil {
		return &StatusMapError{Var: StatusToVar, Err: err}
	}
	*m = v
	return nil
}

// StatusFrom is the setting of [StatusFromVar], helpdesk status to
// upstream status, parsed once when read.
type StatusFrom map[string]guestapi.Status

// EnvDecode parses s with [ParseReverseStatusPairs]; its error names the
// variable.
func (m *StatusFrom) EnvDecode(s string) error {
	v, err := ParseReverseStatusPairs(s)
	if err != nil {
		return &StatusMapError{Var: StatusFromVar, Err: err}
	}
	*m = v
	return nil
}

// ParseStatusPairs parses "upstream=helpdesk,..." (TICKETBRIDGE_STATUS_TO_HELPDESK)
// into a map, checking that each upstream status is one of the seven.
func ParseStatusPairs(s string) (map[guestapi.Status]string, error) {
	out := map[guestapi.Status]string{}
	for k, v := range pairs(s) {
		st, err := guestapi.ParseStatus(k)
		if err != nil {
			return nil, fmt.Errorf("status mapping %q: %w", k+"="+v, err)
		}
		if v == "" {
			return nil, fmt.Errorf("status mapping %q: empty helpdesk status", k+"=")
		}
		out[st] = v
	}
	return out, nil
}

// ParseReverseStatusPairs parses "helpdesk=upstream,..."
// (TICKETBRIDGE_STATUS_FROM_HELPDESK), checking that each upstream status is
// settable through the API.
func ParseReverseStatusPairs(s string) (map[string]guestapi.Status, error) {
	out := map[string]guestapi.Status{}
	for k, v := range pairs(s) {
		st := guestapi.Status(v)
		if !st.Settable() {
			return nil, fmt.Errorf("status mapping %q: %q is not a status the API can set (want one of %s)", k+"="+v, v, statusList(guestapi.SettableStatuses()))
		}
		if k == "" {
			return nil, fmt.Errorf("status mapping %q: empty helpdesk status", "="+v)
		}
		out[k] = st
	}
	return out, nil
}

func pairs(s string) map[string]string {
	out := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, _ := strings.Cut(item, "=")
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out
}

func statusList(ss []guestapi.Status) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
