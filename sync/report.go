package sync

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

// Outcomes of a cycle, stored in state and shown by `ticketbridge status`.
const (
	OutcomeOK      = "ok"      // everything due was done
	OutcomePartial = "partial" // some tickets or entries failed; the rest went on
	OutcomeFailed  = "failed"  // the cycle stopped (a refused key, a lost state file, ...)
	// OutcomePutOff: a side asked for a wait longer than the cycle may sit
	// out; the cycle stopped calling it, and cycles skip it until then
	// (see Report.PutOff).
	OutcomePutOff = "put_off"
	// OutcomeInterrupted: the cycle was cancelled (Ctrl-C, SIGTERM, a
	// daemon stopping); nothing failed, and the next run resumes.
	OutcomeInterrupted = "interrupted"
)

// Report is what one cycle did. It is logged as one line, printed as a
// table by `ticketbridge once`, and stored in state after each cycle.
type Report struct {
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration"`
	// Lag is the time from the cycle's scheduled start to its end, set by
	// the [Scheduler] that ran it (see there); 0 for a cycle run otherwise.
	Lag     time.Duration `json:"lag,omitempty"`
	Outcome string        `json:"outcome"`
	DryRun  bool          `json:"dry_run,omitempty"`
	// Synced says whether the cycle really synced: nothing stopped it and
	// at least one call of the Guest Requests API succeeded. Only such a
	// cycle counts as a success (the last-success time, readiness, the
	// exit status of `ticketbridge once`); a cycle in which every API call
	// failed has the outcome failed with [ErrNoAPISuccess].
	Synced bool `json:"synced"`

	Listed      int `json:"listed"`      // tickets the lists showed
	Signalled   int `json:"signalled"`   // tracked tickets the lists showed changed (read in this cycle)
	Unsignalled int `json:"unsignalled"` // reads that found a change no list could show (updated_at did not move)
	Discovered  int `json:"discovered"`  // tickets listed that state did not hold
	Created     int `json:"created"`     // helpdesk tickets created
	Adopted     int `json:"adopted"`     // helpdesk tickets found by Lookup (state lost)
	Refreshed   int `json:"refreshed"`   // tickets read with GET /tickets/{id}
	Mirrored    int `json:"mirrored"`    // upstream messages appended to the helpdesk
	StatusDown  int `json:"status_down"`
	// FieldsUpdated counts the helpdesk tickets whose copy of the
	// platform's fields was updated (adapters.Updater).
	FieldsUpdated int `json:"fields_updated,omitempty"`
	Events        int `json:"events"`  // helpdesk events journaled (pulled up)
	Sent          int `json:"sent"`    // journal entries confirmed upstream
	Skipped       int `json:"skipped"` // events with nothing to send (notes or status not sent upstream, status already set, superseded, a ticket not this hotel's or deleted upstream)
	Failed        int `json:"failed"`  // entries refused for good
	Errors        int `json:"errors"`  // failures recorded on tickets and entries
	// NotOurs counts the helpdesk tickets found not this hotel's (the API
	// answered 404 for a request the bridge did not create), Deleted the
	// requests taken for deleted on the platform (see notours.go).
	NotOurs int `json:"not_ours,omitempty"`
	Deleted int `json:"deleted,omitempty"`

	APIRequests int `json:"api_requests"` // calls of the Guest Requests API
	Throttled   int `json:"throttled"`    // reads the API answered with 429; the cycle slowed down
	Held        int `json:"held"`         // changes the helpdesk holds until its team acts (adapters.HeldError)
	// Reconcile counts the reconciles by outcome (ReconcileInSync,
	// ReconcileCarriedUp, ...) and the messages and events they repaired
	// (ReconcileAppended, ReconcileJournaled).
	Reconcile map[string]int `json:"reconcile,omitempty"`

	// Touched names the requests (upstream ticket ids) the cycle changed
	// on either side, in the order touched, at most maxTouched of them;
	// TouchedCount counts them all.
	Touched      []string `json:"touched,omitempty"`
	TouchedCount int      `json:"touched_count,omitempty"`
	touched      map[string]bool

	Phases Phases `json:"phases"`
	// Propagation is how long the messages carried in this cycle took to
	// cross, each way.
	Propagation Propagation `json:"propagation,omitzero"`

	// PutOff lists the sides put off at the cycle's end, with until when
	// (see [PutOff]).
	PutOff []PutOff `json:"put_off,omitempty"`
	// FullLists names the lists that held the API's limit of requests
	// when the queue was last listed in full (this cycle, or an earlier
	// one when a list request of this one failed): requests older than
	// the ListLimit-th newest of each may be missing (see [FullList]).
	FullLists []FullList `json:"full_lists,omitempty"`
	// LeftOut counts, rule by rule, the listed requests the rules for
	// what crosses leave out when the queue was last listed in full (see
	// [LeftOut] and rules.go).
	LeftOut []LeftOut `json:"left_out,omitempty"`

	// Fatal is the error that stopped the cycle, "" when none did.
	Fatal string `json:"fatal,omitempty"`
	// Failures lists the tickets and entries that failed, at most
	// maxReportedFailures of them.
	Failures []Failure `json:"failures,omitempty"`
}

// FullList names a list the API answered with [ListLimit] requests, the
// most it shows, with no paging: requests of that status and department
// older than the ListLimit-th newest were not in it. An untracked one
// among them is not discovered (not created in the helpdesk, nothing its
// guest writes mirrored, a staff reply naming it set aside) until newer
// ones leave the status; a tracked one is still read at its full-read
// slot. Only lists of a status the bridge imports from or that holds open
// requests are named: a full closed list hides nothing to import.
//
// Department "" names the status's own list, the only one that shows its
// requests without a department.
type FullList struct {
	Status     guestapi.Status `json:"status"`
	Department string          `json:"department,omitempty"`
}

// String names the list: "new in housekeeping", "new without a department".
func (l FullList) String() string {
	if l.Department == "" {
		return string(l.Status) + " without a department"
	}
	return string(l.Status) + " in " + l.Department
}

// FullListsText names the lists ls, separated by commas.
func FullListsText(ls []FullList) string {
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.String()
	}
	return strings.Join(names, ", ")
}

// FullListsWhy says what a full list means, and FullListsFix what to do
// about it; FullListsHint is both, as status and the status page print it
// after the lists' names.
var (
	FullListsWhy  = fmt.Sprintf("the API shows only the %d newest requests of each, without paging: requests older than the %dth are not discovered (not created in the helpdesk, nothing their guests write mirrored) until newer ones leave that status", ListLimit, ListLimit)
	FullListsFix  = "work the backlog down (close or move on requests of that status and department), or split the department into smaller ones in the hotel's console"
	FullListsHint = FullListsWhy + "; " + FullListsFix
)

// Phases holds the time each phase of a cycle took.
type Phases struct {
	Discover time.Duration `json:"discover"`
	Collect  time.Duration `json:"collect"` // reading helpdesk changes and journaling them
	Refresh  time.Duration `json:"refresh"`
	Send     time.Duration `json:"send"`
}

// Brief returns r without the lists of the requests it touched and of
// its failures: what a history of many cycles keeps of each (the counts
// stay).
func (r Report) Brief() Report {
	r.Touched, r.Failures, r.touched = nil, nil, nil
	return r
}

// Failure is one error of a cycle: the ticket, the message or event it
// concerns when there is one, the operation and the error text.
type Failure struct {
	Ticket  string `json:"ticket"`
	Message string `json:"message,omitempty"` // upstream message or helpdesk event id
	Op      string `json:"op"`
	Error   string `json:"error"`
}

const maxReportedFailures = 100

// maxTouched bounds Report.Touched; logTouched is how many of them the
// cycle's log line names.
const (
	maxTouched = 100
	logTouched = 5
)

// touch records that the cycle changed request id; callers hold the
// cycle's lock.
func (r *Report) touch(id string) {
	if r.touched[id] {
		return
	}
	if r.touched == nil {
		r.touched = map[string]bool{}
	}
	r.touched[id] = true
	r.TouchedCount++
	if len(r.Touched) < maxTouched {
		r.Touched = append(r.Touched, id)
	}
}

// touchedText names the first requests touched by their first 8
// characters (what `ticketbridge status ID` takes), then "and N more".
func (r Report) touchedText() string {
	if r.TouchedCount == 0 {
		return ""
	}
	var names []string
	for _, id := range r.Touched[:min(len(r.Touched), logTouched)] {
		if len(id) > 8 {
			id = id[:8]
		}
		names = append(names, id)
	}
	s := strings.Join(names, ", ")
	if more := r.TouchedCount - len(names); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// noAPISuccess is the error of a cycle in which no API call succeeded,
// with the first failure's reason when one was recorded.
func noAPISuccess(r Report) error {
	if r.APIRequests == 0 {
		return fmt.Errorf("%w: the cycle made none", ErrNoAPISuccess)
	}
	for _, f := range r.Failures {
		if f.Error != "" {
			return fmt.Errorf("%w (%d tried): %s: %s", ErrNoAPISuccess, r.APIRequests, f.Op, f.Error)
		}
	}
	return fmt.Errorf("%w (%d tried)", ErrNoAPISuccess, r.APIRequests)
}

// String is the report as one log line.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cycle %s in %s:", r.Outcome, r.Duration.Round(time.Millisecond))
	if r.DryRun {
		b.WriteString(" (dry run)")
	}
	fmt.Fprintf(&b, " listed %d (changed %d), discovered %d, created %d, adopted %d, refreshed %d, mirrored %d, status down %d, events %d, sent %d, skipped %d, failed %d, errors %d, api requests %d",
		r.Listed, r.Signalled, r.Discovered, r.Created, r.Adopted, r.Refreshed, r.Mirrored, r.StatusDown, r.Events, r.Sent, r.Skipped, r.Failed, r.Errors, r.APIRequests)
	if r.Unsignalled > 0 {
		fmt.Fprintf(&b, ", changes no list showed %d", r.Unsignalled)
	}
	if r.FieldsUpdated > 0 {
		fmt.Fprintf(&b, ", fields updated %d", r.FieldsUpdated)
	}
	if t := r.touchedText(); t != "" {
		fmt.Fprintf(&b, "; requests %s", t)
	}
	for _, p := range r.PutOff {
		fmt.Fprintf(&b, "; %s", p)
	}
	if len(r.FullLists) > 0 {
		fmt.Fprintf(&b, "; full lists (requests older than the %dth newest not discovered): %s", ListLimit, FullListsText(r.FullLists))
	}
	if len(r.LeftOut) > 0 {
		fmt.Fprintf(&b, "; left out by the rules: %s", LeftOutText(r.LeftOut))
	}
	if r.Fatal != "" {
		fmt.Fprintf(&b, "; stopped: %s", r.Fatal)
	}
	if r.Outcome == OutcomeInterrupted {
		b.WriteString("; the next run resumes")
	}
	return b.String()
}

// LogValue is the report as slog attributes.
func (r Report) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("outcome", r.Outcome),
		slog.Duration("duration", r.Duration),
		slog.Int("listed", r.Listed),
		slog.Int("signalled", r.Signalled),
		slog.Int("unsignalled", r.Unsignalled),
		slog.Int("discovered", r.Discovered),
		slog.Int("created", r.Created),
		slog.Int("adopted", r.Adopted),
		slog.Int("refreshed", r.Refreshed),
		slog.Int("mirrored", r.Mirrored),
		slog.Int("status_down", r.StatusDown),
		slog.Int("events", r.Events),
		slog.Int("sent", r.Sent),
		slog.Int("skipped", r.Skipped),
		slog.Int("failed", r.Failed),
		slog.Int("errors", r.Errors),
		slog.Int("api_requests", r.APIRequests),
		slog.Duration("discover", r.Phases.Discover),
		slog.Duration("collect", r.Phases.Collect),
		slog.Duration("refresh", r.Phases.Refresh),
		slog.Duration("send", r.Phases.Send),
	}
	if r.DryRun {
		attrs = append(attrs, slog.Bool("dry_run", true))
	}
	if r.NotOurs+r.Deleted > 0 {
		attrs = append(attrs, slog.Int("not_ours", r.NotOurs), slog.Int("deleted", r.Deleted))
	}
	for _, p := range r.PutOff {
		attrs = append(attrs, slog.Time(p.Side+"_put_off_until", p.Until))
	}
	if len(r.FullLists) > 0 {
		attrs = append(attrs, slog.String("full_lists", FullListsText(r.FullLists)))
	}
	if len(r.LeftOut) > 0 {
		attrs = append(attrs, slog.String("left_out", LeftOutText(r.LeftOut)))
	}
	if r.Fatal != "" {
		attrs = append(attrs, slog.String("fatal", r.Fatal))
	}
	return slog.GroupValue(attrs...)
}

// WriteTable prints the report as a table, followed by its failures.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	title := "cycle"
	if r.DryRun {
		title = "cycle (dry run: nothing was written)"
	}
	rows := [][2]string{
		{title, r.Outcome},
		{"started", r.Start.Local().Format(time.DateTime)},
		{"took", r.Duration.Round(time.Millisecond).String()},
		{"tickets listed", fmt.Sprint(r.Listed)},
		{"tickets the lists showed changed", fmt.Sprint(r.Signalled)},
		{"changes no list showed", fmt.Sprint(r.Unsignalled)},
		{"tickets discovered", fmt.Sprint(r.Discovered)},
		{"helpdesk tickets created", fmt.Sprint(r.Created)},
		{"helpdesk tickets adopted", fmt.Sprint(r.Adopted)},
		{"tickets refreshed", fmt.Sprint(r.Refreshed)},
		{"messages mirrored down", fmt.Sprint(r.Mirrored)},
		{"statuses set in the helpdesk", fmt.Sprint(r.StatusDown)},
		{"helpdesk events pulled up", fmt.Sprint(r.Events)},
		{"sent upstream", fmt.Sprint(r.Sent)},
		{"skipped", fmt.Sprint(r.Skipped)},
		{"refused for good", fmt.Sprint(r.Failed)},
		{"errors", fmt.Sprint(r.Errors)},
		{"API requests", fmt.Sprint(r.APIRequests)},
		{"requests changed", orNone(r.touchedText())},
		{"phases", fmt.Sprintf("discover %s, collect %s, refresh %s, send %s",
			r.Phases.Discover.Round(time.Millisecond), r.Phases.Collect.Round(time.Millisecond),
			r.Phases.Refresh.Round(time.Millisecond), r.Phases.Send.Round(time.Millisecond))},
	}
	for _, p := range r.PutOff {
		rows = append(rows, [2]string{"put off", fmt.Sprintf("%s until %s: %s", p.Side, p.Until.Local().Format(time.DateTime), p.Reason)})
	}
	if len(r.FullLists) > 0 {
		rows = append(rows, [2]string{"full lists", FullListsText(r.FullLists) + "; " + FullListsHint})
	}
	if len(r.LeftOut) > 0 {
		rows = append(rows, [2]string{"left out by the rules", LeftOutText(r.LeftOut)})
	}
	if r.Fatal != "" {
		rows = append(rows, [2]string{"stopped", r.Fatal})
	}
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	if len(r.Failures) > 0 {
		fmt.Fprintf(tw, "\nTICKET\tMESSAGE\tOP\tERROR\n")
		for _, f := range r.Failures {
			msg := f.Message
			if msg == "" {
				msg = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Ticket, msg, f.Op, f.Error)
		}
	}
	return tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
