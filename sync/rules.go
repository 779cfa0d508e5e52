package sync

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
)

// Rules for what crosses. Two kinds, both read once at the configuration's
// edge ([LoadConfig]) and never parsed again below it:
//
//   - Scope: which requests are mirrored, by department and by origin
//     (TICKETBRIDGE_INCLUDE_DEPARTMENTS, TICKETBRIDGE_EXCLUDE_DEPARTMENTS,
//     TICKETBRIDGE_INCLUDE_ORIGINS, TICKETBRIDGE_EXCLUDE_ORIGINS). A
//     request the scope leaves out is never created in the helpdesk. One
//     the helpdesk holds already (created before the rule, or moved into
//     a department left out) stays there and is no longer updated from
//     upstream, while what agents write on it still goes upstream: nothing
//     they write is lost. A request that moves back into the scope is
//     created then, or, if the helpdesk holds it, brought up to date.
//   - Direction: what the helpdesk sends upstream besides replies to the
//     guest (TICKETBRIDGE_UPSTREAM, which TICKETBRIDGE_NOTES_UPSTREAM
//     was the notes part of). Replies always go up. With status left
//     out, an agent's status change stays in the helpdesk, and the next
//     upstream status change overwrites it, as any platform change does.
//
// The scope is judged on what the lists and the reads show of a request
// (its department and origin), so it costs no request: discover does not
// import a request left out, and refresh reads one it tracks as before
// but writes nothing to the helpdesk (see [cycle.leftOut]). Each report
// counts what the scope leaves out ([LeftOut]), for status, check and the
// cycle's log line.

// Departments is a list of department codes
// (TICKETBRIDGE_INCLUDE_DEPARTMENTS, TICKETBRIDGE_EXCLUDE_DEPARTMENTS),
// parsed once when read by [ParseDepartments].
type Departments []string

// EnvDecode parses s with [ParseDepartments]; go-envconfig names the
// variable.
func (d *Departments) EnvDecode(s string) (err error) {
	*d, err = ParseDepartments(s)
	return err
}

// ParseDepartments parses a comma-separated list of department codes, as
// the hotel's console names them: white space around a code and empty
// items are ignored, a code may appear once, and the codes are compared
// exactly.
func ParseDepartments(s string) (Departments, error) {
	var out Departments
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if strings.ContainsAny(item, " \t\r\n=") {
			return nil, fmt.Errorf("department code %q holds a space or '=': want codes separated by commas, such as front_desk,housekeeping", item)
		}
		if slices.Contains(out, item) {
			return nil, fmt.Errorf("names department %q twice", item)
		}
		out = append(out, item)
	}
	return out, nil
}

// Origins is a list of request origins (TICKETBRIDGE_INCLUDE_ORIGINS,
// TICKETBRIDGE_EXCLUDE_ORIGINS), parsed once when read by [ParseOrigins].
type Origins []guestapi.Origin

// EnvDecode parses s with [ParseOrigins]; go-envconfig names the
// variable.
func (o *Origins) EnvDecode(s string) (err error) {
	*o, err = ParseOrigins(s)
	return err
}

// knownOrigins are the origins the API names.
var knownOrigins = []guestapi.Origin{guestapi.OriginGuest, guestapi.OriginStaff, guestapi.OriginInternal}

// ParseOrigins parses a comma-separated list of origins: guest, staff,
// internal. Case and white space around an item are ignored, and so are
// empty items; an origin may appear once.
func ParseOrigins(s string) (Origins, error) {
	var out Origins
	for _, item := range strings.Split(s, ",") {
		o := guestapi.Origin(strings.ToLower(strings.TrimSpace(item)))
		switch {
		case o == "":
			continue
		case !slices.Contains(knownOrigins, o):
			return nil, fmt.Errorf("unknown origin %q: want guest, staff or internal", strings.TrimSpace(item))
		case slices.Contains(out, o):
			return nil, fmt.Errorf("names origin %q twice", o)
		}
		out = append(out, o)
	}
	return out, nil
}

// Upstream is TICKETBRIDGE_UPSTREAM, parsed once when read by
// [ParseUpstream]: what the helpdesk sends upstream besides replies to the
// guest, which always go. The zero Upstream is not set: notes and status
// go, unless the old TICKETBRIDGE_NOTES_UPSTREAM says otherwise.
type Upstream struct {
	set           bool
	Notes, Status bool
}

// UpstreamAll sends notes and status changes upstream: the default.
var UpstreamAll = Upstream{set: true, Notes: true, Status: true}

// EnvDecode parses s with [ParseUpstream]; its errors name the variable
// (go-envconfig does not for a struct).
func (u *Upstream) EnvDecode(s string) error {
	v, err := ParseUpstream(s)
	if err != nil {
		return fmt.Errorf("TICKETBRIDGE_UPSTREAM=%q: %w", s, err)
	}
	*u = v
	return nil
}

// ParseUpstream parses a comma-separated list of what goes upstream
// besides replies: notes (internal notes, posted upstream not visible to
// the guest), status (the helpdesk's status changes); or none for
// neither. Case and white space around an item are ignored. An empty
// value is an error: leave the variable out for the default, notes,status.
func ParseUpstream(s string) (Upstream, error) {
	u := Upstream{set: true}
	none := false
	n := 0
	for _, item := range strings.Split(s, ",") {
		w := strings.ToLower(strings.TrimSpace(item))
		switch w {
		case "":
			continue
		case "notes":
			u.Notes = true
		case "status":
			u.Status = true
		case "none":
			none = true
		case "replies":
			return Upstream{}, errors.New("replies always go upstream and are not named: want notes, status or none")
		default:
			return Upstream{}, fmt.Errorf("unknown item %q: want notes, status or none", strings.TrimSpace(item))
		}
		n++
	}
	switch {
	case n == 0:
		return Upstream{}, errors.New("is empty: want notes, status, both (notes,status) or none; leave it out for notes,status")
	case none && n > 1:
		return Upstream{}, errors.New("names none with other items: want none alone")
	}
	return u, nil
}

// IsSet reports whether u was read from TICKETBRIDGE_UPSTREAM.
func (u Upstream) IsSet() bool { return u.set }

// String is u as TICKETBRIDGE_UPSTREAM would say it.
func (u Upstream) String() string {
	switch {
	case u.Notes && u.Status:
		return "notes,status"
	case u.Notes:
		return "notes"
	case u.Status:
		return "status"
	}
	return "none"
}

// NotesSwitch is the old TICKETBRIDGE_NOTES_UPSTREAM: on or off, and
// whether it was set at all, which [Config.Validate] weighs against
// TICKETBRIDGE_UPSTREAM. The zero NotesSwitch is not set.
type NotesSwitch struct {
	set, on bool
}

// NotesOn is a NotesSwitch set to on; NotesOff one set to off.
var (
	NotesOn  = NotesSwitch{set: true, on: true}
	NotesOff = NotesSwitch{set: true}
)

// EnvDecode parses v as a boolean, as strconv.ParseBool does; its errors
// name the variable (go-envconfig does not for a struct).
func (s *NotesSwitch) EnvDecode(v string) error {
	on, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("TICKETBRIDGE_NOTES_UPSTREAM=%q: want true or false", v)
	}
	*s = NotesSwitch{set: true, on: on}
	return nil
}

// direction resolves what goes upstream from TICKETBRIDGE_UPSTREAM and
// the old TICKETBRIDGE_NOTES_UPSTREAM: the one that is set, the default
// (notes and status) when neither is. Both set is an error naming both,
// whatever their values: one configuration says it once.
func (c Config) direction() (Upstream, error) {
	switch {
	case c.Upstream.set && c.NotesUpstream.set:
		return Upstream{}, errors.New("TICKETBRIDGE_UPSTREAM and TICKETBRIDGE_NOTES_UPSTREAM are both set: TICKETBRIDGE_NOTES_UPSTREAM is the old form of the notes item of TICKETBRIDGE_UPSTREAM; remove it and keep TICKETBRIDGE_UPSTREAM")
	case c.Upstream.set:
		return c.Upstream, nil
	case c.NotesUpstream.set:
		return Upstream{set: true, Notes: c.NotesUpstream.on, Status: true}, nil
	}
	return UpstreamAll, nil
}

// sends reports whether entries of kind (state.KindReply, KindNote,
// KindStatus; the helpdesk's event kinds are the same words) go upstream.
func (u Upstream) sends(kind string) bool {
	switch kind {
	case state.KindNote:
		return u.Notes
	case state.KindStatus:
		return u.Status
	}
	return true
}

// refusal is why an entry of kind is not sent, for the journal.
func (u Upstream) refusal(kind string) error {
	what := "internal notes are"
	if kind == state.KindStatus {
		what = "the helpdesk's status changes are"
	}
	return fmt.Errorf("%s not sent upstream (TICKETBRIDGE_UPSTREAM=%s)", what, u)
}

// keepStatus adjusts a reconcile's status merge m when the helpdesk's
// status does not go upstream: a status that only the helpdesk moved is
// left there, and in a conflict the upstream status wins.
func (u Upstream) keepStatus(m statusMerge, upstream guestapi.Status) statusMerge {
	if u.Status || m.up == "" {
		return m
	}
	if m.conflict {
		return statusMerge{outcome: ReconcileConflict, down: upstream, conflict: true}
	}
	return statusMerge{outcome: ReconcileInSync}
}

// scope is the include and exclude rules, as the engine tests them.
type scope struct {
	inDept, outDept     Departments
	inOrigin, outOrigin Origins
}

// scopeOf checks the include and exclude rules of c: each dimension takes
// one of its two variables.
func (c Config) scopeOf() (scope, error) {
	switch {
	case len(c.IncludeDepartments) > 0 && len(c.ExcludeDepartments) > 0:
		return scope{}, errors.New("TICKETBRIDGE_INCLUDE_DEPARTMENTS and TICKETBRIDGE_EXCLUDE_DEPARTMENTS are both set: set one (the departments to mirror, or those to leave out)")
	case len(c.IncludeOrigins) > 0 && len(c.ExcludeOrigins) > 0:
		return scope{}, errors.New("TICKETBRIDGE_INCLUDE_ORIGINS and TICKETBRIDGE_EXCLUDE_ORIGINS are both set: set one (the origins to mirror, or those to leave out)")
	}
	return scope{inDept: c.IncludeDepartments, outDept: c.ExcludeDepartments, inOrigin: c.IncludeOrigins, outOrigin: c.ExcludeOrigins}, nil
}

// any reports whether s leaves anything out.
func (s scope) any() bool {
	return len(s.inDept)+len(s.outDept)+len(s.inOrigin)+len(s.outOrigin) > 0
}

// leaves returns the rule that leaves out a request of department dept and
// origin o, and whether one does. The department is judged first: a
// request both rules leave out is counted under its department.
func (s scope) leaves(dept string, o guestapi.Origin) (LeftOut, bool) {
	switch {
	case len(s.inDept) > 0 && !slices.Contains(s.inDept, dept):
		return LeftOut{Variable: "TICKETBRIDGE_INCLUDE_DEPARTMENTS", Department: dept}, true
	case slices.Contains(s.outDept, dept):
		return LeftOut{Variable: "TICKETBRIDGE_EXCLUDE_DEPARTMENTS", Department: dept}, true
	case len(s.inOrigin) > 0 && !slices.Contains(s.inOrigin, o):
		return LeftOut{Variable: "TICKETBRIDGE_INCLUDE_ORIGINS", Origin: o}, true
	case slices.Contains(s.outOrigin, o):
		return LeftOut{Variable: "TICKETBRIDGE_EXCLUDE_ORIGINS", Origin: o}, true
	}
	return LeftOut{}, false
}

// String says what the rules leave out, for check: "requests of department
// maintenance; requests of origin internal", "" when nothing.
func (s scope) String() string {
	var parts []string
	if len(s.inDept) > 0 {
		parts = append(parts, "requests of departments other than "+strings.Join(s.inDept, ", "))
	}
	if len(s.outDept) > 0 {
		parts = append(parts, "requests of department "+strings.Join(s.outDept, ", "))
	}
	if len(s.inOrigin) > 0 {
		parts = append(parts, "requests of origins other than "+joinOrigins(s.inOrigin))
	}
	if len(s.outOrigin) > 0 {
		parts = append(parts, "requests of origin "+joinOrigins(s.outOrigin))
	}
	return strings.Join(parts, "; ")
}

func joinOrigins(os Origins) string {
	names := make([]string, len(os))
	for i, o := range os {
		names[i] = string(o)
	}
	return strings.Join(names, ", ")
}

// RulesText says in words what the rules of c leave out, what goes
// upstream and, when on, the priority rule, for check: "leave out
// requests of origin internal; upstream: replies, notes, status;
// priority: default=normal,due<2h=high". c must be valid.
func RulesText(c Config) string {
	p, err := c.parse()
	if err != nil {
		return err.Error()
	}
	up := "replies"
	if p.up.Notes {
		up += ", notes"
	}
	if p.up.Status {
		up += ", status"
	}
	out := "nothing left out"
	if p.scope.any() {
		out = "leave out " + p.scope.String()
	}
	out += "; upstream: " + up
	if p.Priority.On() {
		out += "; priority: " + p.Priority.String()
	}
	return out
}

// LeftOut counts, in a cycle's report, the requests one rule leaves out:
// those the lists showed that the helpdesk does not hold (NotCreated;
// among them only the requests the bridge would import otherwise: new or
// a backfill status, or created since the first start), and those it
// holds from before that are no longer updated from upstream
// (NotUpdated). Variable names the rule's setting; Department or Origin
// what it left out.
type LeftOut struct {
	Variable   string          `json:"variable"`
	Department string          `json:"department,omitempty"`
	Origin     guestapi.Origin `json:"origin,omitempty"`
	NotCreated int             `json:"not_created,omitempty"`
	NotUpdated int             `json:"not_updated,omitempty"`
}

// String says what l counts: `department "spa" (TICKETBRIDGE_INCLUDE_DEPARTMENTS):
// 3 not created, 1 no longer updated`.
func (l LeftOut) String() string {
	what := fmt.Sprintf("department %q", l.Department)
	if strings.HasSuffix(l.Variable, "_ORIGINS") {
		what = fmt.Sprintf("origin %q", l.Origin)
	}
	var counts []string
	if l.NotCreated > 0 {
		counts = append(counts, fmt.Sprintf("%d not created", l.NotCreated))
	}
	if l.NotUpdated > 0 {
		counts = append(counts, fmt.Sprintf("%d no longer updated", l.NotUpdated))
	}
	return fmt.Sprintf("%s (%s): %s", what, l.Variable, strings.Join(counts, ", "))
}

// LeftOutText names ls, separated by semicolons.
func LeftOutText(ls []LeftOut) string {
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.String()
	}
	return strings.Join(names, "; ")
}

// LeftOutHint says what a count of [LeftOut] means, as status and check
// print it after the counts.
const LeftOutHint = "the rules for what crosses leave these requests out: one not created is not in the helpdesk, one no longer updated stays there as it was while its agents' replies, notes and status still go upstream; change the rule to mirror them (see docs/rules.md)"

// leftOutCounter counts, while discover plans, what the scope leaves out.
type leftOutCounter map[LeftOut]*LeftOut

// count counts a listed request of department dept and origin o that the
// scope leaves out, held in the helpdesk or not; it reports whether the
// scope leaves it out.
func (lc *leftOutCounter) count(s scope, dept string, o guestapi.Origin, held bool) bool {
	k, out := s.leaves(dept, o)
	if !out {
		return false
	}
	if *lc == nil {
		*lc = leftOutCounter{}
	}
	l := (*lc)[k]
	if l == nil {
		c := k
		l = &c
		(*lc)[k] = l
	}
	if held {
		l.NotUpdated++
	} else {
		l.NotCreated++
	}
	return true
}

// list returns the counts in a stable order: by variable, then by what was
// left out.
func (lc leftOutCounter) list() []LeftOut {
	if len(lc) == 0 {
		return nil
	}
	out := make([]LeftOut, 0, len(lc))
	for _, l := range lc {
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b LeftOut) int {
		return strings.Compare(a.Variable+"\x00"+a.Department+"\x00"+string(a.Origin), b.Variable+"\x00"+b.Department+"\x00"+string(b.Origin))
	})
	return out
}

// leftOut ends the read of a ticket the scope leaves out (d is what the
// read found): nothing is written to the helpdesk, neither messages nor
// status, and a ticket the helpdesk does not hold is not created there.
// What state learns of the upstream ticket is kept (its department,
// status and updated_at), so the lists do not show it changed again, and
// a move back into the scope is seen as one. Pending helpdesk status
// changes that a newer upstream change overrides are superseded, as on
// any ticket; the others go up in send, like the agents' replies and
// notes. A reconcile due is taken as done: there is nothing to compare.
// An operator's connect waits while rule lo leaves the request out, and
// the request is listed as failing with why, so that it does not wait
// unseen.
func (c *cycle) leftOut(r refreshResult, th *guestapi.Thread, pend []state.Entry, reconcile bool, lo LeftOut) refreshResult {
	d := th.Ticket
	p := planThread(r.t, th, nil, pend)
	r.supersede, r.supersBy = p.supersede, d.Status
	r.t.Department = d.Department
	r.t.UpstreamStatus, r.t.UpstreamUpdatedAt = string(d.Status), d.UpdatedAt
	if reconcile {
		r.t.ReconciledAt, r.t.ReconcileSoon = c.now, false
	}
	// Active only while the helpdesk side moves: upstream changes are
	// not carried.
	c.e.pol.afterRead(&r.t, c.now, len(pend) > 0 || r.orig.DueReason == DueEvent)
	if r.t.ConnectRef != "" {
		what := "department " + lo.Department
		if lo.Department == "" {
			what = "origin " + string(lo.Origin)
		}
		err := fmt.Errorf("%w: %s leaves the request out (%s); the connect to %s waits until the rules take it in", ErrLeftOut, lo.Variable, what, r.t.ConnectRef)
		c.failure(r.t.ID, "", "connect", err)
		c.e.pol.afterError(&r.t, c.now, "connect: "+err.Error())
	}
	return r
}

// ErrLeftOut: the rules leave a request out, and an operator's connect of
// it waits.
var ErrLeftOut = errors.New("left out by the rules")
