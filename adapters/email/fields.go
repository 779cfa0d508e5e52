package email

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// noted are the fields whose values are noted once per distinct value
// (adapters.RatingNote, adapters.CommentNote): a value the thread ever
// noted is not noted again. The others are named again whenever they
// differ from the newest value the thread holds.
const noted = adapters.FieldSet(adapters.FieldRating | adapters.FieldComment)

// carried are the fields the email helpdesk carries: it has no priority.
const carried = adapters.AllFields &^ adapters.FieldSet(adapters.FieldPriority)

// Update carries the platform's fields as a note (see adapters.Updater):
// a short follow-up in the request's thread naming what changed ("Moved
// to housekeeping.", "Deadline: ...", "Description now: ...", "Guest
// rated 4.", "Console comment: ..."). Mail has no fields of its own, and
// no priority: a change of priority alone writes nothing.
//
// What the thread holds is read from the sent folder: each mail of the
// bridge names, in a header, a hash of each field's value it carried (the
// first mail those it was created with). A field is named when its value
// differs from the newest the thread holds; a rating or console comment
// when the thread never noted that value. Setting what the thread holds
// sends nothing. The follow-up's Message-ID is derived from the upstream
// id, the number of follow-ups before it and the values it names, so a
// repeat after a crash finds it in the sent folder and sends nothing.
//
// A department move sends the follow-up to the address the new department
// routes to, in the thread (In-Reply-To, References), and the thread's
// later mails go there too. The follow-up is the bridge's own mail:
// Changes never reports it.
func (a *Adapter) Update(ctx context.Context, ref adapters.Ref, u adapters.FieldUpdate) error {
	th, err := a.mustThread(ctx, ref)
	if err != nil {
		return err
	}
	vals := fieldValues(u.New)
	var names adapters.FieldSet
	for _, f := range (u.Changed & carried).Fields() {
		id := adapters.FieldValueID(vals[f])
		if noted.Has(f) {
			if th.noted[f][id] || (f == adapters.FieldComment && vals[f] == "" && len(th.noted[f]) == 0) {
				continue // noted once; a comment never set needs no "removed"
			}
		} else if held, ok := th.held[f]; ok && held == id {
			continue
		}
		names = names.With(f)
	}
	if names == 0 {
		return nil
	}
	to := th.to
	if names.Has(adapters.FieldDepartment) {
		to = a.addressOf(u.New.Department)
	}
	m := outMail{kind: kindFields, ticket: th.ticket, to: to, subject: "Re: " + th.subject,
		id: a.ids.fields(th.ticket, th.fieldsCount, names, vals), fields: fieldsHeader(names, vals),
		date: time.Now(), body: fieldsBody(names, u)}
	if err := a.send(ctx, th, m); err != nil {
		return fmt.Errorf("update %s (%s): %w", ref, names, err)
	}
	return nil
}

// fieldValues are the values of f as the thread's headers hash them.
func fieldValues(f adapters.Fields) map[adapters.Field]string {
	v := map[adapters.Field]string{
		adapters.FieldDepartment: f.Department,
		adapters.FieldTitle:      f.Title,
		adapters.FieldComment:    f.Comment,
		adapters.FieldDue:        "",
		adapters.FieldRating:     "",
	}
	if !f.Due.IsZero() {
		v[adapters.FieldDue] = f.Due.UTC().Format(time.RFC3339Nano)
	}
	if f.Rating != nil {
		v[adapters.FieldRating] = adapters.FormatRating(*f.Rating)
	}
	return v
}

// fieldsHeader is the hFields header of a mail carrying the fields s:
// "department=<id> title=<id>", each id adapters.FieldValueID of the value.
func fieldsHeader(s adapters.FieldSet, vals map[adapters.Field]string) string {
	var parts []string
	for _, f := range s.Fields() {
		parts = append(parts, f.String()+"="+adapters.FieldValueID(vals[f]))
	}
	return strings.Join(parts, " ")
}

// parseFieldsHeader reads what fieldsHeader wrote, leaving out what it
// does not know.
func parseFieldsHeader(h string) map[adapters.Field]string {
	out := map[adapters.Field]string{}
	for p := range strings.FieldsSeq(h) {
		name, id, ok := strings.Cut(p, "=")
		s, err := adapters.ParseFieldSet(name)
		if !ok || err != nil || len(s.Fields()) != 1 || id == "" {
			continue
		}
		out[s.Fields()[0]] = id
	}
	return out
}

// fields is the Message-ID of the n-th follow-up of ticket's fields,
// naming the fields s with the values vals.
func (d ids) fields(ticket string, n int, s adapters.FieldSet, vals map[adapters.Field]string) string {
	sum := sha256.Sum256([]byte(fieldsHeader(s, vals)))
	return fmt.Sprintf("tb.fields.%d.%s.%s@%s", n, hex.EncodeToString(sum[:8]), idPart(ticket), d.domain)
}

// createdFields is the hFields header of a thread's first mail: the
// fields the request was created with.
func createdFields(t adapters.Ticket) string {
	f := adapters.Fields{Department: t.Department, Title: t.TaskDescription, Rating: t.GuestRating, Comment: t.Comments}
	s := adapters.FieldSet(adapters.FieldDepartment | adapters.FieldTitle | adapters.FieldDue | adapters.FieldRating)
	if t.Comments != "" {
		s = s.With(adapters.FieldComment)
	}
	return fieldsHeader(s, fieldValues(f))
}

// fieldsBody names what changed, a line or paragraph a field, with the
// value before where the bridge knows it (u.Old not zero).
func fieldsBody(s adapters.FieldSet, u adapters.FieldUpdate) string {
	known := adapters.Diff(u.Old, adapters.Fields{}) != 0
	was := func(v string) string {
		if !known {
			return ""
		}
		return " (was " + v + ")"
	}
	nw, old := u.New, u.Old
	var parts []string
	for _, f := range s.Fields() {
		switch f {
		case adapters.FieldDepartment:
			parts = append(parts, "Moved to "+adapters.OrNone(nw.Department)+was(adapters.OrNone(old.Department))+".")
		case adapters.FieldTitle:
			t := strings.TrimSpace(nw.Title)
			if strings.Contains(t, "\n") {
				parts = append(parts, "Description now:\n\n"+t)
			} else {
				parts = append(parts, "Description now: "+adapters.OrNone(t))
			}
		case adapters.FieldDue:
			parts = append(parts, "Deadline: "+dueText(nw.Due)+was(dueText(old.Due)))
		case adapters.FieldRating:
			if nw.Rating == nil {
				parts = append(parts, "Guest rating removed.")
			} else {
				text, _ := adapters.RatingNote(*nw.Rating)
				parts = append(parts, text)
			}
		case adapters.FieldComment:
			text, _ := adapters.CommentNote(nw.Comment)
			parts = append(parts, text)
		}
	}
	return strings.Join(parts, "\n\n") + "\n"
}

func dueText(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(adapters.TimeLayout) + " UTC"
}
