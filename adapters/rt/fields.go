package rt

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
)

var _ adapters.Updater = (*Adapter)(nil)

// Priorities maps the bridge's priorities to RT's Priority, a number.
// They fall in the bands of RT 5's default labels (%PriorityAsString:
// Low 0, Medium 50, High 100), so that RT shows low as Low, normal as
// Medium, and high and urgent as High; urgent sorts above high. A site
// with labels of its own sees the numbers in its bands.
var Priorities = map[adapters.Priority]int64{
	adapters.PriorityLow:    0,
	adapters.PriorityNormal: 50,
	adapters.PriorityHigh:   100,
	adapters.PriorityUrgent: 150,
}

// dueNotSet is how RT writes a Due that is not set: the epoch. RT's
// Create writes it for a ticket without a due date, and RT::Ticket's
// DueObj reads it as unset; REST2 then reads "1970-01-01T00:00:00Z".
const dueNotSet = "1970-01-01 00:00:00"

// dueLayout is how the adapter writes Due: SQL's form, in UTC. REST2's
// update hands the string to the database as it is (RT::Record::Update
// calls SetDue, which parses nothing), and RT reads it back as SQL: a
// W3CDTF string ("…T…Z") is stored, shown in RT's history, and then read
// back by REST2 as not set (seen on RT 5.0.3).
const dueLayout = "2006-01-02 15:04:05"

// Update keeps the platform's fields of ticket ref current in RT. It
// reads the ticket once and writes only what differs from it, in one
// PUT, which it then checks by reading the ticket again (REST2 answers a
// refused change with 200 and a message): a repeat, or an update that
// carries what the ticket holds already (a lost state), writes nothing
// and leaves no transaction. Where each field lands:
//
//   - Department: the ticket moves to the queue the department routes to
//     (TICKETBRIDGE_RT_QUEUES, else TICKETBRIDGE_RT_QUEUE), as at
//     creation. RT refuses a move between queues whose lifecycles have no
//     mapping between them; the error says so.
//   - Title (task_description): the Subject, its first line as at
//     creation; the rest of a longer description stays in the ticket's
//     first message as it was created.
//   - Due (target_due_at): RT's Due, written in UTC to the second. RT
//     accepts a date in the past as it is (the ticket shows as overdue):
//     nothing on RT's update path checks a due date against the clock or
//     the status. A cleared due date clears RT's: JSON null would be
//     ignored (RT::Record::Update skips undefined values), so the adapter
//     writes RT's "not set", the epoch (see dueNotSet).
//   - Rating: the custom field TICKETBRIDGE_RT_RATING_FIELD where it is
//     configured (RT has no rating of its own; a cleared rating empties
//     it), and one internal comment per distinct rating
//     ([adapters.RatingNote]).
//   - Comment (the console card's comment): one internal comment per
//     distinct text ([adapters.CommentNote]); a removed comment gets one
//     too when the bridge carried one before.
//   - Priority: RT's Priority, by [Priorities]; "" leaves RT's alone.
//   - Origin is written at creation, in the ticket's first message (the
//     line "Guest request … · origin …"), and never updated.
//
// The comments end with a marker ([adapters.MarkerRating],
// [adapters.MarkerComment]) and are not written when the ticket holds one
// by the bridge's RT user with that marker already, so that a repeat
// after an error or a lost state writes none twice. A comment notifies no
// requester and leaves the status alone. Nothing Update writes comes
// back from Changes: it searches correspondence, comments and status
// changes only, leaves out the bridge's own user, and skips a text ending
// in one of the bridge's markers. RT has no rate budget, so Update never
// returns an [adapters.WaitError].
func (a *Adapter) Update(ctx context.Context, ref adapters.Ref, u adapters.FieldUpdate) error {
	id, err := parseRef(ref)
	if err != nil {
		return fmt.Errorf("update fields: %w", err)
	}
	if p := u.New.Priority; u.Changed.Has(adapters.FieldPriority) && p != "" {
		if _, ok := Priorities[p]; !ok {
			return fmt.Errorf("update fields of RT ticket %d: priority %q is none of low, normal, high, urgent: %w", id, p, adapters.ErrInvalid)
		}
	}
	s, err := a.ready(ctx)
	if err != nil {
		return err
	}
	tk, err := a.getTicket(ctx, "update", id)
	if err != nil {
		return fmt.Errorf("update fields: %w", err)
	}
	if err := a.fieldNotes(ctx, s, id, u); err != nil {
		return err
	}
	set := a.fieldWrites(s, tk, u)
	if len(set) == 0 {
		return nil
	}
	resp, err := a.c.call(ctx, "update", http.MethodPut, fmt.Sprintf("/ticket/%d", id), nil, set, nil, true)
	if err != nil {
		return fmt.Errorf("update fields %s of RT ticket %d: %w", names(set), id, err)
	}
	now, err := a.getTicket(ctx, "update", id)
	if err != nil {
		return fmt.Errorf("update fields: %w", err)
	}
	if left := a.fieldWrites(s, now, u); len(left) > 0 {
		said := strings.Join(messages(resp), "; ")
		err := fmt.Errorf("update fields of RT ticket %d: RT did not take %s; RT said: %s", id, names(left), said)
		if _, queue := left["Queue"]; queue && strings.Contains(said, "no mapping for statuses") {
			err = fmt.Errorf("%w (give the department queues one lifecycle, or map their lifecycles to each other in RT's %%Lifecycles, under __maps__): %w", err, adapters.ErrInvalid)
		}
		return err
	}
	a.log.LogAttrs(ctx, slog.LevelDebug, "updated fields", slog.String("ticket", u.UpstreamID),
		slog.String("op", "update"), slog.Int64("rt_ticket", id), slog.String("fields", names(set)))
	return nil
}

// fieldWrites returns the PUT body that makes ticket tk hold the fields
// of u.Changed: only what differs from what it holds; empty when nothing
// does.
func (a *Adapter) fieldWrites(s *setup, tk rtTicket, u adapters.FieldUpdate) map[string]any {
	nw, set := u.New, map[string]any{}
	if u.Changed.Has(adapters.FieldDepartment) {
		q := a.queueFor(nw.Department)
		if qid, ok := s.queueIDs[q]; !ok || int64(tk.Queue.ID) != qid {
			set["Queue"] = q
		}
	}
	if u.Changed.Has(adapters.FieldTitle) {
		want := subject(adapters.Ticket{UpstreamID: u.UpstreamID, TaskDescription: nw.Title})
		if !sameSubject(tk.Subject, want) {
			set["Subject"] = want
		}
	}
	if u.Changed.Has(adapters.FieldDue) {
		want := nw.Due.UTC().Truncate(time.Second)
		if !heldDue(tk.Due).Equal(want) {
			set["Due"] = formatDue(want)
		}
	}
	if u.Changed.Has(adapters.FieldPriority) && nw.Priority != "" {
		if want, ok := Priorities[nw.Priority]; ok && int64(tk.Priority) != want {
			set["Priority"] = want
		}
	}
	if u.Changed.Has(adapters.FieldRating) && s.ratingCF != 0 {
		held := ""
		if vs := tk.values(s.ratingCF); len(vs) > 0 {
			held = vs[0]
		}
		cf := strconv.FormatInt(s.ratingCF, 10)
		switch {
		case nw.Rating == nil && held != "":
			set["CustomFields"] = map[string]any{cf: nil} // REST2 deletes a one-value field's value on null
		case nw.Rating != nil && !sameRating(held, *nw.Rating):
			set["CustomFields"] = map[string]any{cf: adapters.FormatRating(*nw.Rating)}
		}
	}
	return set
}

// fieldNotes writes the internal comments of u's rating and console
// comment that ticket id does not hold yet (by their markers, written by
// the bridge's own RT user).
func (a *Adapter) fieldNotes(ctx context.Context, s *setup, id int64, u adapters.FieldUpdate) error {
	type note struct {
		text string
		m    adapters.Marker
	}
	var notes []note
	if u.Changed.Has(adapters.FieldRating) && u.New.Rating != nil {
		text, m := adapters.RatingNote(*u.New.Rating)
		notes = append(notes, note{text, m})
	}
	if u.Changed.Has(adapters.FieldComment) && (u.New.Comment != "" || u.Old.Comment != "") {
		text, m := adapters.CommentNote(normalizeNewlines(u.New.Comment))
		notes = append(notes, note{text, m})
	}
	if len(notes) == 0 {
		return nil
	}
	held := map[adapters.Marker]bool{}
	if _, err := a.eachMarker(ctx, id, 0, func(m adapters.Marker, _ int64, creator string) {
		held[m] = held[m] || strings.EqualFold(creator, s.me.name())
	}); err != nil {
		return fmt.Errorf("update fields: %w", err)
	}
	for _, n := range notes {
		if held[n.m] {
			continue
		}
		body := map[string]any{"Content": strings.TrimRight(n.text, "\n") + "\n\n" + n.m.Line() + "\n", "ContentType": "text/plain"}
		if _, err := a.c.call(ctx, "update note", http.MethodPost, fmt.Sprintf("/ticket/%d/comment", id), nil, body, nil, false); err != nil {
			return fmt.Errorf("write the %s note on RT ticket %d: %w", n.m.Kind, id, err)
		}
		a.log.LogAttrs(ctx, slog.LevelDebug, "wrote field note", slog.String("ticket", u.UpstreamID),
			slog.String("op", "update"), slog.Int64("rt_ticket", id), slog.String("note", n.m.Kind))
	}
	return nil
}

// heldDue reads RT's Due; zero when it is not set (the epoch, or a value
// REST2 could not read).
func heldDue(s string) time.Time {
	t, err := rtTime(s)
	if err != nil || t.Unix() <= 0 {
		return time.Time{}
	}
	return t
}

// formatDue writes a due date for RT's Due; the zero time clears it.
func formatDue(t time.Time) string {
	if t.IsZero() || t.Unix() <= 0 {
		return dueNotSet
	}
	return t.UTC().Format(dueLayout)
}

// sameRating reports whether the rating field's value held is r.
func sameRating(held string, r float64) bool {
	v, err := strconv.ParseFloat(strings.TrimSpace(held), 64)
	return err == nil && v == r
}

// maxSubjectBytes is the size of RT's Subject column (varchar(200)); RT
// cuts a longer value to fit (RT::Record::TruncateValue).
const maxSubjectBytes = 200

// sameSubject reports whether RT's Subject held is want, or what RT keeps
// of it when want does not fit the column.
func sameSubject(held, want string) bool {
	if held == want {
		return true
	}
	return len(want) > maxSubjectBytes && held != "" && strings.HasPrefix(want, held)
}

// names lists the fields of a PUT body, in a stable order, for errors and
// the log.
func names(set map[string]any) string {
	return strings.Join(slices.Sorted(maps.Keys(set)), ", ")
}
