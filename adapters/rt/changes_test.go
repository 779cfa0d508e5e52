package rt

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// These tests show that Changes never skips a change RT commits late: RT
// numbers a transaction when it inserts the row, inside a database
// transaction that may commit after a later one, and inserts a message's
// attachments after its transaction row. The fake serves what Changes
// reads, with rows that the test makes visible when it chooses.

// fakeTxn is a transaction of the fake; hidden ones are not committed yet.
type fakeTxn struct {
	id      int64
	typ     string
	ticket  int64
	creator string
	created time.Time
	hidden  bool
}

// fakeAtt is an attachment of the fake, a text part or, with a filename,
// a file; hidden ones are not committed yet.
type fakeAtt struct {
	txn            int64
	ctype, content string
	filename       string
	hidden         bool
}

// changesRT is the part of the fake that Changes reads: transactions,
// attachments, mirrored tickets and RT's clock (the Date header).
type changesRT struct {
	now      time.Time
	txns     []fakeTxn
	atts     []fakeAtt
	tickets  map[int64]string // RT ticket id -> upstream id
	comments []string         // the texts of the comments the bridge wrote
}

// ticketOf returns the ticket of transaction id, 0 when unknown.
func (c *changesRT) ticketOf(id int64) int64 {
	for _, t := range c.txns {
		if t.id == id {
			return t.ticket
		}
	}
	return 0
}

var idAfterRE = regexp.MustCompile(`\bid > (\d+)`)

// serveChanges answers the requests of Changes; it reports whether it
// answered. f.mu is held.
func (f *fakeRT) serveChanges(w http.ResponseWriter, r *http.Request) bool {
	c := &f.changes
	if !c.now.IsZero() {
		w.Header().Set("Date", c.now.UTC().Format(http.TimeFormat))
	}
	switch {
	case r.URL.Path == "/REST/2.0/transactions":
		m := idAfterRE.FindStringSubmatch(r.URL.Query().Get("query"))
		if m == nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"message":"the fake wants id > n"}`)
			return true
		}
		after, _ := strconv.ParseInt(m[1], 10, 64)
		var items []map[string]any
		ts := slices.Clone(c.txns)
		slices.SortFunc(ts, func(x, y fakeTxn) int { return int(x.id - y.id) })
		for _, t := range ts {
			if t.hidden || t.id <= after {
				continue
			}
			items = append(items, map[string]any{
				"id": t.id, "type": "transaction", "Type": t.typ, "ObjectId": strconv.FormatInt(t.ticket, 10),
				"Creator": map[string]any{"id": t.creator, "Name": t.creator, "RealName": t.creator},
				"Created": t.created.UTC().Format(time.RFC3339),
			})
		}
		writePage(w, r, items)
	case r.URL.Path == "/REST/2.0/attachments" && r.Method == http.MethodPost:
		var conds []searchCond
		if err := json.NewDecoder(r.Body).Decode(&conds); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return true
		}
		txns := map[int64]bool{}
		textOnly, filesOnly := false, false
		for _, cd := range conds {
			switch cd.Field {
			case "TransactionId":
				txns[int64(cd.Value.(float64))] = true
			case "ContentType":
				textOnly = true
			case "Filename":
				filesOnly = true
			}
		}
		var items []map[string]any
		for i, at := range c.atts {
			if at.hidden || !txns[at.txn] || textOnly && at.filename != "" || filesOnly && at.filename == "" {
				continue
			}
			items = append(items, map[string]any{"id": i + 1, "TransactionId": at.txn, "ContentType": at.ctype, "Content": at.content, "Filename": at.filename})
		}
		writePage(w, r, items)
	case strings.HasSuffix(r.URL.Path, "/attachments") && r.Method == http.MethodPost:
		// a ticket's text parts, for the markers
		id, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/REST/2.0/ticket/"), "/attachments"), 10, 64)
		var items []map[string]any
		for i, at := range c.atts {
			if !at.hidden && at.filename == "" && at.ctype == "text/plain" && c.ticketOf(at.txn) == id {
				items = append(items, map[string]any{"id": i + 1, "TransactionId": at.txn, "Content": at.content})
			}
		}
		writePage(w, r, items)
	case strings.HasSuffix(r.URL.Path, "/comment") && r.Method == http.MethodPost:
		id, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/REST/2.0/ticket/"), "/comment"), 10, 64)
		var in struct{ Content, ContentType string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.ContentType != "text/plain" {
			w.WriteHeader(http.StatusBadRequest)
			return true
		}
		txn := int64(5000 + len(c.txns))
		c.txns = append(c.txns, fakeTxn{id: txn, typ: "Comment", ticket: id, creator: "ticketbridge", created: c.now})
		c.atts = append(c.atts, fakeAtt{txn: txn, ctype: "text/plain", content: in.Content})
		c.comments = append(c.comments, in.Content)
		w.Header().Set("Location", fmt.Sprintf("/REST/2.0/transaction/%d", txn))
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `["Comments added"]`)
	case strings.HasPrefix(r.URL.Path, "/REST/2.0/ticket/"):
		id, err := strconv.ParseInt(strings.TrimPrefix(r.URL.Path, "/REST/2.0/ticket/"), 10, 64)
		up, ok := c.tickets[id]
		if err != nil || !ok {
			return false
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "Status": "open",
			"CustomFields": []map[string]any{{"id": "2", "name": DefaultIDField, "values": []string{up}}}})
	default:
		return false
	}
	return true
}

// writePage writes one page of items as REST2 pages a collection.
func writePage(w http.ResponseWriter, r *http.Request, items []map[string]any) {
	per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if per <= 0 {
		per = 20
	}
	pg, _ := strconv.Atoi(r.URL.Query().Get("page"))
	if pg <= 0 {
		pg = 1
	}
	pages := (len(items) + per - 1) / per
	from, to := min((pg-1)*per, len(items)), min(pg*per, len(items))
	_ = json.NewEncoder(w).Encode(map[string]any{"count": to - from, "page": pg, "per_page": per, "pages": pages, "total": len(items), "items": items[from:to]})
}

// The fake's time, transactions and tickets.
var t0 = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)

const (
	mirrored = 7 // an RT ticket that mirrors guest request up-7
	agentRT  = "alice"
)

func newChangesFake() *fakeRT {
	f := newFakeRT()
	f.changes = changesRT{now: t0, tickets: map[int64]string{mirrored: "up-7"}}
	return f
}

// reply adds an agent's correspondence with body text at the fake's time.
func (f *fakeRT) reply(id int64, text string, hidden bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changes.txns = append(f.changes.txns, fakeTxn{id: id, typ: "Correspond", ticket: mirrored, creator: agentRT, created: f.changes.now, hidden: hidden})
	if text != "" {
		f.changes.atts = append(f.changes.atts, fakeAtt{txn: id, ctype: "text/plain", content: text, hidden: hidden})
	}
}

// commit makes transaction id and its attachments visible.
func (f *fakeRT) commit(id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.changes.txns {
		if f.changes.txns[i].id == id {
			f.changes.txns[i].hidden = false
		}
	}
	for i := range f.changes.atts {
		if f.changes.atts[i].txn == id {
			f.changes.atts[i].hidden = false
		}
	}
}

// attach adds a visible text/plain attachment to transaction id.
func (f *fakeRT) attach(id int64, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changes.atts = append(f.changes.atts, fakeAtt{txn: id, ctype: "text/plain", content: text})
}

// file attaches a file called name to transaction id.
func (f *fakeRT) file(id int64, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changes.atts = append(f.changes.atts, fakeAtt{txn: id, ctype: "image/png", content: "\x89PNG", filename: name})
}

// comments returns the texts of the comments the bridge wrote.
func (f *fakeRT) comments() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.changes.comments)
}

// advance moves the fake's clock.
func (f *fakeRT) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changes.now = f.changes.now.Add(d)
}

// changesOnce calls Changes once and returns the events' ids and bodies.
func changesOnce(t *testing.T, a *Adapter, c adapters.Cursor) ([]string, adapters.Cursor) {
	t.Helper()
	evs, next, err := a.Changes(t.Context(), c)
	if err != nil {
		t.Fatalf("Changes(%q): %v", c, err)
	}
	var out []string
	for _, ev := range evs {
		if ev.UpstreamTicketID != "up-7" || ev.Kind != adapters.EventReply {
			t.Errorf("event %+v: want a reply on up-7", ev)
		}
		out = append(out, ev.ID+":"+ev.Body)
	}
	return out, next
}

// TestChangesLateCommit: transaction 1001 is visible while 1000, numbered
// first, is not committed yet. The call that sees 1001 reports it; the next
// call, which sees 1000, reports 1000 and not 1001 again. The cursor is an
// old one, a bare transaction id, as earlier versions wrote.
func TestChangesLateCommit(t *testing.T) {
	f := newChangesFake()
	a, _ := openFake(t, f, Config{})
	f.reply(1000, "On my way with the towels.", true)
	f.reply(1001, "The spa opens at ten.", false)

	got, c := changesOnce(t, a, "999")
	if want := []string{"1001:The spa opens at ten."}; !slices.Equal(got, want) {
		t.Fatalf("first call: %q, want %q", got, want)
	}
	f.commit(1000)
	f.advance(30 * time.Second)
	got, c = changesOnce(t, a, c)
	if want := []string{"1000:On my way with the towels."}; !slices.Equal(got, want) {
		t.Fatalf("after 1000 committed: %q, want %q (1000 reported once, 1001 not again)", got, want)
	}
	for range 3 {
		f.advance(time.Minute)
		if got, c = changesOnce(t, a, c); len(got) != 0 {
			t.Fatalf("a later call reported %q again", got)
		}
	}
}

// TestChangesBodyCommittedLate: a reply whose attachment is not visible yet
// reads empty; it is read again later, and reported once, with its body.
// Once older than the overlap, an empty one is left out as before.
func TestChangesBodyCommittedLate(t *testing.T) {
	f := newChangesFake()
	a, _ := openFake(t, f, Config{})
	f.reply(1000, "", false)

	got, c := changesOnce(t, a, "999")
	if len(got) != 0 {
		t.Fatalf("a reply without its body yet: reported %q", got)
	}
	f.attach(1000, "The room is ready.")
	f.advance(20 * time.Second)
	got, c = changesOnce(t, a, c)
	if want := []string{"1000:The room is ready."}; !slices.Equal(got, want) {
		t.Fatalf("after the body committed: %q, want %q", got, want)
	}
	if got, c = changesOnce(t, a, c); len(got) != 0 {
		t.Fatalf("reported again: %q", got)
	}

	// An update that stays empty is left out once older than the overlap,
	// and does not hold the cursor back.
	f.reply(1001, "", false)
	if got, c = changesOnce(t, a, c); len(got) != 0 {
		t.Fatalf("an empty reply: reported %q", got)
	}
	f.advance(3 * time.Minute)
	if got, c = changesOnce(t, a, c); len(got) != 0 {
		t.Fatalf("an empty reply older than the overlap: reported %q", got)
	}
	f.attach(1001, "Too late to count.")
	f.advance(time.Minute)
	if got, _ = changesOnce(t, a, c); len(got) != 0 {
		t.Fatalf("an update given up on came back: %q", got)
	}
}

// TestChangesMemoryBounded: the ids the cursor remembers are those of the
// overlap, however many changes went by.
func TestChangesMemoryBounded(t *testing.T) {
	f := newChangesFake()
	a, _ := openFake(t, f, Config{})
	c := adapters.Cursor("999")
	reported := map[string]int{}
	const step = 10 * time.Second
	for i := range int64(60) {
		f.reply(1000+i, fmt.Sprintf("Reply %d.", i), false)
		got, next := changesOnce(t, a, c)
		for _, g := range got {
			reported[g]++
		}
		c = next
		// The overlap (2m) holds at most 13 changes 10s apart.
		pc, err := parseCursor(c)
		if err != nil {
			t.Fatal(err)
		}
		if len(pc.done) > 13 || pc.floor < 1000+i-13 {
			t.Fatalf("after %d changes the cursor is %q: it remembers more than the overlap", i+1, c)
		}
		f.advance(step)
	}
	if len(reported) != 60 {
		t.Errorf("reported %d changes, want 60", len(reported))
	}
	for g, n := range reported {
		if n != 1 {
			t.Errorf("%s reported %d times", g, n)
		}
	}
	f.advance(5 * time.Minute)
	if _, c = changesOnce(t, a, c); c != "rt1:1059:" {
		t.Errorf("the cursor once the overlap is past: %q, want rt1:1059:", c)
	}
}

// TestChangesBurstInOverlap: more changes within the overlap than one call
// reads. The pages already reported do not count against the call's bound,
// so the next call goes on where the first stopped.
func TestChangesBurstInOverlap(t *testing.T) {
	f := newChangesFake()
	a, _ := openFake(t, f, Config{})
	n := int64(changesPages*perPage + perPage/2)
	for i := range n {
		f.reply(1000+i, fmt.Sprintf("Reply %d.", i), false)
	}
	reported := map[string]int{}
	c := adapters.Cursor("999")
	for call := 0; ; call++ {
		if call == 5 {
			t.Fatalf("Changes did not run dry: %d of %d reported", len(reported), n)
		}
		got, next := changesOnce(t, a, c)
		for _, g := range got {
			reported[g]++
		}
		if len(got) == 0 && next == c {
			break
		}
		c = next
		f.advance(time.Second)
	}
	if int64(len(reported)) != n {
		t.Errorf("reported %d changes, want %d", len(reported), n)
	}
	for g, k := range reported {
		if k != 1 {
			t.Errorf("%s reported %d times", g, k)
		}
	}
}

// TestChangesAttachmentsNoted: RT holds a reply with a file and a reply
// that is only a file. The text of the first goes upstream as it is, the
// second sends nothing, and the ticket gets one comment naming the files
// of each. Reading the same transactions again (the engine crashed before
// it stored the cursor, or a dry run peeks) writes no second comment, and
// the bridge's own comments do not come back.
func TestChangesAttachmentsNoted(t *testing.T) {
	f := newChangesFake()
	a, _ := openFake(t, f, Config{})
	f.reply(1000, "Here is the map.", false)
	f.file(1000, "map.png")
	f.file(1000, "invoice.pdf")
	f.reply(1001, "", false)
	f.file(1001, "photo.jpg")

	want := []string{"1000:Here is the map."}
	got, c := changesOnce(t, a, "999")
	if !slices.Equal(got, want) {
		t.Fatalf("Changes: %q, want %q (the text alone; nothing for the photo alone)", got, want)
	}
	notes := []string{
		"Not sent to the guest: map.png, invoice.pdf (the Guest Requests API carries text only).\n\n[ticketbridge unsent 1000]\n",
		"Not sent to the guest: photo.jpg (the Guest Requests API carries text only).\n\n[ticketbridge unsent 1001]\n",
	}
	if got := f.comments(); !slices.Equal(got, notes) {
		t.Fatalf("comments written: %q, want %q", got, notes)
	}
	if again, _ := changesOnce(t, a, "999"); !slices.Equal(again, want) {
		t.Errorf("read again: %q, want %q", again, want)
	}
	peek, _, err := a.PeekChanges(t.Context(), "999")
	if err != nil || len(peek) != 1 || peek[0].Body != "Here is the map." {
		t.Errorf("PeekChanges: %+v, %v; want the reply's text", peek, err)
	}
	if got := f.comments(); !slices.Equal(got, notes) {
		t.Errorf("after reading again the comments are %q, want still %q", got, notes)
	}
	f.advance(time.Minute)
	if got, _ = changesOnce(t, a, c); len(got) != 0 {
		t.Errorf("the bridge's comments came back: %q", got)
	}
}
