package statuspage

// The pages of a hotel: the overview, the table of requests and a
// request's page.

import (
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/notify"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// overviewData is the front page.
type overviewData struct {
	Status      sync.Status
	Chart       template.HTML
	Cycles      int
	ByOutcome   map[string]int
	Requests    int
	MeanTook    time.Duration
	Propagation []propRow
	Failing     []sync.TicketStatus
	FailingN    int
	Pending     []sync.EntryStatus
	Waiting     int // pending entries backing off
	Oldest      time.Time
	Failed      []sync.EntryStatus
	// FullLists are the lists the newest cycle found holding the API's
	// limit of requests, and FullListsHint what that means.
	FullLists     []sync.FullList
	FullListsHint string
	// Conditions are the notifications' open episodes.
	Conditions []notify.Episode
}

type propRow struct {
	Label         string
	Count         uint64
	P50, P90, P99 string
	Chart         template.HTML
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request, p scope) {
	snap := p.src.Snapshot()
	now := time.Now()
	st := snap.Status
	d := &overviewData{Status: st, ByOutcome: map[string]int{}, Conditions: snap.Conditions}
	d.Chart = cycleChart(snap.Cycles, now, time.Hour)
	var prop sync.Propagation
	var took time.Duration
	for _, c := range snap.Cycles {
		if c.Start.Before(now.Add(-time.Hour)) {
			continue
		}
		d.Cycles++
		d.ByOutcome[c.Outcome]++
		d.Requests += c.APIRequests
		took += c.Duration
		prop.ToHelpdesk.Merge(c.Propagation.ToHelpdesk)
		prop.ToGuest.Merge(c.Propagation.ToGuest)
	}
	if d.Cycles > 0 {
		d.MeanTook = took / time.Duration(d.Cycles)
	}
	for _, p := range []struct {
		label string
		h     sync.Histogram
	}{{"Guest → helpdesk", prop.ToHelpdesk}, {"Agent → guest", prop.ToGuest}} {
		d.Propagation = append(d.Propagation, propRow{Label: p.label, Count: p.h.Count(),
			P50: quantile(p.h, 0.5), P90: quantile(p.h, 0.9), P99: quantile(p.h, 0.99), Chart: histChart(p.h, p.label)})
	}
	for _, t := range st.Tickets {
		if t.LastError == "" && t.Attempts == 0 {
			continue
		}
		d.FailingN++
		if len(d.Failing) < overviewRows {
			d.Failing = append(d.Failing, t)
		}
	}
	for _, e := range st.Pending {
		if e.NextAttempt.After(now) {
			d.Waiting++
		}
		if d.Oldest.IsZero() || (!e.CreatedAt.IsZero() && e.CreatedAt.Before(d.Oldest)) {
			d.Oldest = e.CreatedAt
		}
	}
	// The newest cycle kept in memory, else the last one stored.
	if n := len(snap.Cycles); n > 0 {
		d.FullLists = snap.Cycles[n-1].FullLists
	} else if st.LastCycle != nil {
		d.FullLists = st.LastCycle.FullLists
	}
	d.FullListsHint = sync.FullListsHint
	d.Pending = st.Pending[:min(len(st.Pending), overviewRows)]
	d.Failed = st.Failed[:min(len(st.Failed), 2*overviewRows)]
	v := s.view(r, p, "Status")
	v.Overview = d
	s.render(w, http.StatusOK, "overview", v)
}

func quantile(h sync.Histogram, q float64) string {
	b, ok := h.Quantile(q)
	switch {
	case h.Count() == 0:
		return "–"
	case !ok:
		return "> " + shortDur(b)
	}
	return "≤ " + shortDur(b)
}

// ticketsData is the searchable table.
type ticketsData struct {
	Q            string
	Errors       bool
	Rows         []sync.TicketStatus
	Total        int
	Matched      int
	Page, Pages  int
	Prev, Next   string
	First, Last  int
	SnapshotTime time.Time
}

func (s *Server) tickets(w http.ResponseWriter, r *http.Request, p scope) {
	snap := p.src.Snapshot()
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if len(q) > 200 {
		q = q[:200]
	}
	onlyErrors := r.URL.Query().Get("errors") != ""
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	page = max(page, 1)
	lq := strings.ToLower(q)
	var rows []sync.TicketStatus
	matched := 0
	first := (page - 1) * pageSize
	for _, t := range snap.Status.Tickets {
		if onlyErrors && t.LastError == "" && t.Attempts == 0 {
			continue
		}
		if lq != "" && !matches(t, lq) {
			continue
		}
		if matched >= first && len(rows) < pageSize {
			rows = append(rows, t)
		}
		matched++
	}
	d := &ticketsData{Q: q, Errors: onlyErrors, Rows: rows, Total: len(snap.Status.Tickets), Matched: matched,
		Page: page, Pages: max(1, (matched+pageSize-1)/pageSize), First: first + 1, Last: first + len(rows), SnapshotTime: snap.Status.At}
	link := func(n int) string {
		v := url.Values{}
		if q != "" {
			v.Set("q", q)
		}
		if onlyErrors {
			v.Set("errors", "1")
		}
		v.Set("page", strconv.Itoa(n))
		return p.base + "/tickets?" + v.Encode()
	}
	if page > 1 {
		d.Prev = link(page - 1)
	}
	if page < d.Pages {
		d.Next = link(page + 1)
	}
	v := s.view(r, p, "Requests")
	v.Tickets = d
	s.render(w, http.StatusOK, "tickets", v)
}

func matches(t sync.TicketStatus, lq string) bool {
	for _, f := range []string{t.ID, t.Ref, t.Department, t.UpstreamStatus, t.HelpdeskStatus, t.DueReason, t.LastError} {
		if strings.Contains(strings.ToLower(f), lq) {
			return true
		}
	}
	return false
}

// ticketData is one request's page.
type ticketData struct {
	D        sync.TicketDetail
	Due      string
	Why      string
	Mirrored []messageRow
	Own      []messageRow
	Journal  []journalRow
	// Audit is the newest part of the request's audit trail, oldest
	// first; AuditOlder counts the older entries left out (the whole
	// trail: ticketbridge log ID).
	Audit      []state.Audit
	AuditOlder int
}

// auditShown bounds the audit entries a request's page shows.
const auditShown = 100

// messageRow is a message of a request's page: its upstream id, its
// helpdesk id (or the helpdesk event it was posted for), and, to a
// signed-in user, who wrote it, when, and its first words.
type messageRow struct {
	ID, Other string
	Info      *state.MessageInfo // nil unless signed in and kept
}

type journalRow struct {
	sync.EntryStatus
	Payload  *state.Payload // nil unless signed in
	CanRetry bool
	CanSkip  bool
}

func (s *Server) ticket(w http.ResponseWriter, r *http.Request, p scope) {
	d, err := p.src.Ticket(r.PathValue("id"))
	if err != nil {
		s.messageIn(w, r, p, http.StatusNotFound, err.Error())
		return
	}
	v := s.view(r, p, "Request "+short(d.ID))
	td := &ticketData{D: d, Due: d.DueText(v.Now), Why: sync.DueReasonText(d.DueReason)}
	var info map[string]state.MessageInfo
	if v.SignedIn {
		info = d.Messages // the guest's words: personal data, for staff only
	}
	td.Mirrored = messageRows(d.MirroredMessages, info)
	td.Own = messageRows(d.OwnMessages, info)
	var payloads map[string]state.Payload
	if v.SignedIn {
		if payloads, err = p.src.Payloads(d.ID); err != nil {
			s.log.Warn("read journal payloads", slog.Any("error", err), slog.String("op", "console"), slog.Any("ticket", d.ID))
		}
	}
	for _, e := range d.Journal {
		row := journalRow{EntryStatus: e, CanRetry: e.State != string(state.Sent), CanSkip: e.State == string(state.Pending) || e.State == string(state.Failed)}
		if p, ok := payloads[e.EventID]; ok {
			row.Payload = &p
		}
		td.Journal = append(td.Journal, row)
	}
	td.Audit = d.Audit
	if n := len(td.Audit); n > auditShown {
		td.Audit, td.AuditOlder = td.Audit[n-auditShown:], n-auditShown
	}
	v.Ticket = td
	s.render(w, http.StatusOK, "ticket", v)
}

// auditLines answers a request's whole audit trail as JSON lines, oldest
// first: what `ticketbridge log` reads while the daemon holds the state
// file. It shows what the request's page shows, no more.
func (s *Server) auditLines(w http.ResponseWriter, r *http.Request, p scope) {
	d, err := p.src.Ticket(r.PathValue("id"))
	if err != nil {
		s.messageIn(w, r, p, http.StatusNotFound, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	_ = sync.WriteTrailJSON(w, d.Audit) // an error: the client went away
}

// messageRows returns the rows of m (upstream id to the other side's),
// sorted by id, each with its entry of info.
func messageRows(m map[string]string, info map[string]state.MessageInfo) []messageRow {
	out := make([]messageRow, 0, len(m))
	for k, v := range m {
		row := messageRow{ID: k, Other: v}
		if in, ok := info[k]; ok {
			row.Info = &in
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b messageRow) int { return strings.Compare(a.ID, b.ID) })
	return out
}
