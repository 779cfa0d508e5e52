package email

import (
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-message/mail"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// update calls Update on a fresh instance, as a restarted bridge would.
func (w *world) update(u adapters.FieldUpdate) {
	w.t.Helper()
	u.UpstreamID = string(w.ref)
	a := w.b.open(w.t, nil)
	defer a.Close()
	if err := a.Update(w.t.Context(), w.ref, u); err != nil {
		w.t.Fatalf("Update(%s): %v", u.Changed, err)
	}
}

// followUps are the bridge's follow-ups of fields in user's inbox.
func (w *world) followUps(user string) []readMail {
	var out []readMail
	for _, m := range (&agent{b: w.b, t: w.t}).mails(user) {
		if m.Header.Get(hKind) == kindFields {
			out = append(out, m)
		}
	}
	return out
}

var created = adapters.Fields{Department: "housekeeping", Title: "Two extra pillows for room 214"}

func TestFieldsDepartmentMoveGoesToTheNewAddressInTheThread(t *testing.T) {
	w := newWorld(t, nil)
	due := time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)
	nw := created
	nw.Department, nw.Due = "maintenance", due
	w.update(adapters.FieldUpdate{Changed: adapters.FieldSet(adapters.FieldDepartment | adapters.FieldDue), New: nw, Old: created})

	if n := len(w.followUps("housekeeping")); n != 0 {
		t.Errorf("%d follow-ups went to the old department, want 0", n)
	}
	got := w.followUps("maintenance")
	if len(got) != 1 {
		t.Fatalf("%d follow-ups in maintenance's inbox, want 1", len(got))
	}
	for _, want := range []string{"Moved to maintenance (was housekeeping).", "Deadline: 2026-12-03 14:00 UTC (was none)"} {
		if !strings.Contains(got[0].Body, want) {
			t.Errorf("the follow-up does not say %q:\n%s", want, got[0].Body)
		}
	}
	h := mail.Header{Header: got[0].Header}
	root := w.a.ids.root(string(w.ref))
	if irt, _ := h.MsgIDList("In-Reply-To"); len(irt) != 1 || irt[0] != root {
		t.Errorf("In-Reply-To %v, want the thread's first mail <%s>", irt, root)
	}
	if refs, _ := h.MsgIDList("References"); len(refs) == 0 || refs[0] != root {
		t.Errorf("References %v, want the thread's first mail first", refs)
	}

	// The thread goes on at the new department: a status mail follows it.
	a := w.b.open(t, nil)
	defer a.Close()
	if err := a.SetStatus(t.Context(), w.ref, "in_progress"); err != nil {
		t.Fatal(err)
	}
	var status int
	for _, m := range (&agent{b: w.b, t: t}).mails("maintenance") {
		if m.Header.Get(hKind) == kindStatus {
			status++
		}
	}
	if status != 1 {
		t.Errorf("%d status mails in maintenance's inbox after the move, want 1", status)
	}
	if evs := w.changes(); len(evs) != 0 {
		t.Errorf("Changes reported the bridge's own follow-up: %+v", evs)
	}
}

func TestFieldsSameValuesNeverMailTwice(t *testing.T) {
	w := newWorld(t, nil)
	four := 4.0
	nw := created
	nw.Title, nw.Rating, nw.Comment = "Three extra pillows for room 214", &four, "VIP"
	all := adapters.AllFields
	w.update(adapters.FieldUpdate{Changed: all, New: nw, Old: created})
	// Again, as after a lost state (Old zero), and the values the request
	// was created with, which the thread's first mail holds.
	w.update(adapters.FieldUpdate{Changed: all, New: nw})
	w.update(adapters.FieldUpdate{Changed: adapters.FieldSet(adapters.FieldDepartment), New: nw})
	got := w.followUps("housekeeping")
	if len(got) != 1 {
		t.Fatalf("%d follow-ups, want 1", len(got))
	}
	body := got[0].Body
	for _, want := range []string{"Description now: Three extra pillows for room 214", "Guest rated 4.", "Console comment:\n\nVIP"} {
		if !strings.Contains(strings.ReplaceAll(body, "\r\n", "\n"), want) {
			t.Errorf("the follow-up does not say %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "Moved") || strings.Contains(body, "Deadline") {
		t.Errorf("the follow-up names a field that did not change:\n%s", body)
	}

	// The title back to what it was is a change again; the rating back
	// to 4 after 5 is not noted twice.
	five := 5.0
	back := nw
	back.Title, back.Rating = created.Title, &five
	w.update(adapters.FieldUpdate{Changed: adapters.FieldSet(adapters.FieldTitle | adapters.FieldRating), New: back, Old: nw})
	again := back
	again.Rating = &four
	w.update(adapters.FieldUpdate{Changed: adapters.FieldSet(adapters.FieldRating), New: again, Old: back})
	if got := w.followUps("housekeeping"); len(got) != 2 {
		t.Errorf("%d follow-ups, want 2: the first, then the title back with rating 5; rating 4 was noted already", len(got))
	}
}

// TestFieldsResendAfterACrashHasTheSameID: the copy of a follow-up is
// lost, as when the bridge died between the server's 250 and keeping it;
// the repeat is sent with the same Message-ID, and no more.
func TestFieldsResendAfterACrashHasTheSameID(t *testing.T) {
	w := newWorld(t, nil)
	nw := created
	nw.Title = "A blanket too"
	u := adapters.FieldUpdate{Changed: adapters.FieldSet(adapters.FieldTitle), New: nw, Old: created}
	w.update(u)
	first := w.followUps("housekeeping")
	if len(first) != 1 {
		t.Fatalf("%d follow-ups, want 1", len(first))
	}
	id := first[0].Header.Get("Message-Id")
	c := w.b.imapDial(t, "bridge")
	if _, err := c.Select(DefaultSentFolder, nil).Wait(); err != nil {
		t.Fatal(err)
	}
	uids, _ := searchUIDs(c, &imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Message-ID", Value: strings.Trim(id, "<>")}}})
	if len(uids) != 1 {
		t.Fatalf("%d copies of %s in the sent folder, want 1", len(uids), id)
	}
	if err := c.Store(imap.UIDSetNum(uids...), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagDeleted}}, nil).Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Expunge().Close(); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	w.update(u)
	w.update(u)
	got := w.followUps("housekeeping")
	if len(got) != 2 {
		t.Fatalf("%d follow-ups, want 2: once, and once more after the lost copy", len(got))
	}
	if again := got[1].Header.Get("Message-Id"); again != id {
		t.Errorf("the resend has Message-ID %s, want %s", again, id)
	}
}
