package sync_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk/zendeskfake"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// badEnv is a hotel in a known state for one bad answer: two tickets
// mirrored, an agent reply delivered, a later guest message mirrored.
type badEnv struct {
	*env
	target, other string
	zd            *zendeskfake.Server           // the helpdesk, for the rows on the helpdesk side
	zdSwap        *atomic.Pointer[http.Handler] // replaces the Zendesk fake when set
}

// badCase is one bad answer and what the engine must say about it.
type badCase struct {
	name string
	// api answers requests of the public API in the bad cycle.
	api func(b *badEnv) refserver.Hook
	// helpdesk answers the helpdesk's requests in the bad cycle (the
	// helpdesk is then Zendesk, through its adapter).
	helpdesk http.Handler
	// news: a guest writes before the bad cycle, so the bad answer is the
	// one that brings news.
	news bool
	// pending: an agent reply waits for its retry when the bad cycle starts.
	pending bool
	// want matches the error the cycle reports; "" means the answer is good
	// in another form, and the cycle must report no error at all.
	want string
}

// TestBadInput: each bad answer of the API or the helpdesk gives a clear
// error (in the cycle's report, on the ticket or entry it concerns) and
// changes nothing the bridge stores, nor anything on either side; the next
// good answers are synced as usual. An answer that is good in another
// form (other timestamp forms) gives no error and changes nothing either.
func TestBadInput(t *testing.T) {
	const list = "GET " + refserver.BasePath + "/tickets"
	html := `<!DOCTYPE html><html><head><title>Down for maintenance</title></head><body><h1>Back soon</h1></body></html>`
	proxy := `<html><head><title>502 Bad Gateway</title></head><body><center>nginx</center></body></html>`
	for _, c := range []badCase{
		// GET /tickets.
		{name: "list/malformed JSON", api: on(list, answer(200, "application/json", `{"tickets":[{"id":"`)),
			want: `list tickets: decode answer of GET /ops-public-api/v1/tickets: unusable answer: unexpected end of JSON input`},
		{name: "list/tickets of the wrong type", api: on(list, answer(200, "application/json", `{"tickets":{"id":"x"}}`)),
			want: `list tickets: .*unusable answer: tickets: json: cannot unmarshal object`},
		{name: "list/id of the wrong type", api: on(list, editJSON(func(b *badEnv, m map[string]any) { item(m, "tickets", 0)["id"] = 42 })),
			want: `unusable answer: tickets: json: cannot unmarshal number .*\bid\b`},
		{name: "list/huge body", api: on(list, answer(200, "application/json", `{"tickets":[`+strings.Repeat(" ", guestapi.MaxBodySize)+`]}`)),
			want: `list tickets: read answer of GET /ops-public-api/v1/tickets: unusable answer: larger than 16777216 bytes`},
		{name: "list/invalid UTF-8", api: on(list, replace(`"target"`, "\"target \xff\xfe\"")),
			want: `list tickets: .*unusable answer: .*not valid UTF-8`},
		{name: "list/duplicate ids", api: on(list, editJSON(func(b *badEnv, m map[string]any) {
			ts := m["tickets"].([]any)
			dup := map[string]any{}
			for k, v := range ts[0].(map[string]any) {
				dup[k] = v
			}
			dup["status"], dup["task_description"] = "done", "the same id, other content"
			m["tickets"] = append(ts, dup)
		})),
			want: `list tickets: .*unusable answer: tickets\[2\]: id "[0-9a-f-]+" repeats tickets\[0\]`},
		{name: "list/HTML maintenance page", api: on(list, answer(200, "text/html", html)),
			want: `list tickets: .*unusable answer: want a JSON object, got <!DOCTYPE html>`},
		{name: "list/HTML proxy error", api: on(list, refserver.AnswerHTML(http.StatusBadGateway, proxy)),
			want: `list tickets \(4 attempts\): GET /ops-public-api/v1/tickets: HTTP 502: 502 Bad Gateway`},

		// GET /tickets/{id}.
		{name: "ticket/malformed JSON", news: true, api: onTarget(answer(200, "application/json", `{"ticket":{"id":`)),
			want: `get ticket: decode answer of GET /ops-public-api/v1/tickets/[0-9a-f-]+: unusable answer: unexpected end of JSON input`},
		{name: "ticket/body of the wrong type", news: true, api: onTarget(editJSON(func(b *badEnv, m map[string]any) { last(m)["body"] = true })),
			want: `get ticket: .*unusable answer: decode message: json: cannot unmarshal bool .*body`},
		{name: "ticket/invalid UTF-8", news: true, api: onTarget(replace("newest guest message", "newest guest message \xff\xfe")),
			want: `get ticket: .*unusable answer: .*not valid UTF-8`},
		{name: "ticket/unknown status", api: onTarget(editJSON(func(b *badEnv, m map[string]any) { m["ticket"].(map[string]any)["status"] = "escalated" })),
			want: `set helpdesk status: .*unknown status "escalated"`},
		{name: "ticket/timestamp as a number", news: true, api: onTarget(editJSON(func(b *badEnv, m map[string]any) { m["ticket"].(map[string]any)["updated_at"] = 1772442000 })),
			want: `get ticket: .*unusable answer: decode ticket: bad timestamp 1772442000: want a string`},
		{name: "ticket/timestamp in a local form", news: true, api: onTarget(editJSON(func(b *badEnv, m map[string]any) { last(m)["created_at"] = "02/03/2026 09:00" })),
			want: `get ticket: .*unusable answer: decode message: bad timestamp "02/03/2026 09:00": want ISO 8601`},
		{name: "ticket/repeated message id", news: true, api: onTarget(editJSON(func(b *badEnv, m map[string]any) {
			ms := m["messages"].([]any)
			dup := map[string]any{}
			for k, v := range last(m) {
				dup[k] = v
			}
			dup["body"] = "the same id, another text"
			m["messages"] = append(ms, dup)
		})),
			want: `get ticket: .*unusable answer: messages\[\d+\]: id "[0-9a-f-]+" repeats messages\[\d+\]`},
		{name: "ticket/message without id", news: true, api: onTarget(editJSON(func(b *badEnv, m map[string]any) { delete(last(m), "id") })),
			want: `get ticket: .*unusable answer: messages\[\d+\]: id is missing`},
		{name: "ticket/another ticket", news: true, api: onTarget(editJSON(func(b *badEnv, m map[string]any) { m["ticket"].(map[string]any)["id"] = b.other })),
			want: `get ticket: the API answered with ticket "[0-9a-f-]+"`},
		{name: "ticket/HTML maintenance page", news: true, api: onTarget(answer(200, "text/html; charset=utf-8", html)),
			want: `get ticket: .*unusable answer: want a JSON object, got <!DOCTYPE html>`},
		{name: "ticket/timestamps with another offset", api: onTarget(editJSON(func(b *badEnv, m map[string]any) {
			retime(m, func(t time.Time) string { return t.In(time.FixedZone("", 2*3600)).Format(time.RFC3339Nano) })
		}))},
		{name: "ticket/timestamps without T or offset", api: onTarget(editJSON(func(b *badEnv, m map[string]any) {
			retime(m, func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.999999") })
		}))},

		// POST /tickets/{id}/messages.
		{name: "post/answer without message_id", pending: true, api: onPost(answer(200, "application/json", `{"success":true}`)),
			want: `post message: decode answer of POST /ops-public-api/v1/tickets/[0-9a-f-]+/messages: unusable answer: message_id is missing`},
		{name: "post/message_id of the wrong type", pending: true, api: onPost(answer(200, "application/json", `{"success":true,"message_id":42}`)),
			want: `post message: .*unusable answer: json: cannot unmarshal number .*message_id`},

		// The helpdesk.
		{name: "helpdesk/HTML maintenance page", news: true, helpdesk: htmlHandler(200, html),
			want: `(read helpdesk changes|append messages): .*invalid character '<' looking for beginning of value`},
		{name: "helpdesk/HTML proxy error", news: true, helpdesk: htmlHandler(http.StatusBadGateway, proxy),
			want: `(read helpdesk changes|append messages): .*HTTP 502`},
	} {
		t.Run(c.name, func(t *testing.T) { runBadCase(t, c) })
	}
}

func runBadCase(t *testing.T, c badCase) {
	b := newBadEnv(t, c.helpdesk != nil)
	if c.pending {
		ref := b.ref(b.target)
		if _, err := b.backend.Reply(ref, "Agent", "a reply waiting for its retry"); err != nil {
			t.Fatal(err)
		}
		b.ts.Server.SetHook(refserver.Match(http.MethodPost, "/ops-public-api/", fail500))
		if r := b.tick(); r.Errors == 0 {
			t.Fatalf("the reply did not fail: %s", r)
		}
		b.ts.Server.SetHook(nil)
	}
	if c.news {
		b.guest(b.target, "newest guest message")
	}
	b.clock.Advance(2 * time.Hour) // every ticket and entry is due
	before := b.snapshot()

	if c.api != nil {
		b.ts.Server.SetHook(c.api(b))
	}
	if c.helpdesk != nil {
		b.zdSwap.Store(&c.helpdesk)
	}
	rep, err := b.engine.RunCycle(context.Background())
	b.ts.Server.SetHook(nil)
	b.zdSwap.Store(nil)

	var said []string
	if err != nil {
		said = append(said, err.Error())
	}
	for _, f := range rep.Failures {
		said = append(said, f.Op+": "+f.Error)
	}
	if c.want == "" {
		if len(said) != 0 || rep.Errors != 0 {
			t.Errorf("a good answer in another form gave errors: %q", said)
		}
	} else if re := regexp.MustCompile(c.want); !matchAny(re, said) {
		t.Errorf("the cycle said %q\nwant an error matching %s", said, c.want)
	}
	logs := b.logs.String()
	for _, s := range said {
		s = s[strings.Index(s, ": ")+2:]
		if q := strconv.Quote(s); !strings.Contains(logs, s) && !strings.Contains(logs, q[1:len(q)-1]) {
			t.Errorf("error not logged: %s", s)
		}
	}
	if after := b.snapshot(); after != before {
		t.Errorf("the bad answer changed what is stored:\n%s", lineDiff(before, after))
	}

	// The good answers are synced as usual.
	b.clock.Advance(2 * time.Hour)
	if c.helpdesk != nil {
		b.clock.Advance(2 * time.Minute) // past the Zendesk export's delay
		b.tick()
		if r := b.tick(); r.Errors != 0 {
			t.Fatalf("after the helpdesk recovered: %s", r)
		}
		return
	}
	b.quiesce()
	b.checkExactlyOnce()
	if c.pending {
		if en := entry(t, b.store, b.target, "a reply waiting for its retry"); en.State != state.Sent {
			t.Fatalf("the waiting reply after recovery: %+v", en)
		}
	}
}

func matchAny(re *regexp.Regexp, ss []string) bool {
	for _, s := range ss {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// newBadEnv makes the known state: on the memory helpdesk, or on Zendesk
// (its fake behind a switch) when zd is set.
func newBadEnv(t *testing.T, zd bool) *badEnv {
	b := &badEnv{env: newEnv(t), zdSwap: &atomic.Pointer[http.Handler]{}}
	b.cfg.Concurrency = 1
	if zd {
		b.zd = zendeskfake.New(zendeskfake.Options{Email: "bridge@hotel.example", Token: "zd-token-bad-input"})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if h := b.zdSwap.Load(); h != nil {
				(*h).ServeHTTP(w, r)
				return
			}
			b.zd.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		b.wrapHD = func(adapters.Helpdesk) adapters.Helpdesk {
			hd, err := zendesk.New(zendesk.Config{Common: saas.Common{URL: adapters.ParseURL(srv.URL)}, Email: "bridge@hotel.example", Token: "zd-token-bad-input"},
				adapters.Deps{Logger: slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))},
				zendesk.Options{HTTP: srv.Client(), Sleep: b.clock.Sleep})
			if err != nil {
				t.Fatal(err)
			}
			return hd
		}
	}
	b.target = b.newTicket("target")
	b.other = b.newTicket("other")
	b.cycle()
	if !zd {
		b.clock.Advance(time.Minute)
		if _, err := b.backend.Reply(b.ref(b.target), "Agent", "an answer already delivered"); err != nil {
			t.Fatal(err)
		}
		if r := b.tick(); r.Sent != 1 {
			t.Fatalf("baseline reply: %s", r)
		}
	}
	b.clock.Advance(time.Minute)
	b.guest(b.target, "a later guest message")
	b.clock.Advance(time.Hour)
	if r := b.tick(); r.Mirrored != 1 || r.Errors != 0 {
		t.Fatalf("baseline guest message: %s", r)
	}
	b.tick() // the helpdesk cursor passes the bridge's own writes
	return b
}

// snapshot renders what the bridge stores and what both sides hold, all
// but the bookkeeping a failed try may change (a ticket's or entry's
// error, attempts and next due time, the cycle reports).
func (b *badEnv) snapshot() string {
	b.t.Helper()
	type ticket struct {
		ID, Department, Ref, UpstreamStatus, HelpdeskStatus string
		UpstreamUpdatedAt, HelpdeskStatusAt, ClosedAt       time.Time
		Retired                                             bool
		Mirrored                                            map[string]state.MirroredMessage
		Own                                                 map[string]state.OwnMessage
		Journal                                             []any
	}
	var snap struct {
		Stats    state.Stats
		Tickets  []ticket
		Cursors  map[string]string
		Meta     map[string]string
		Helpdesk any
		Upstream []refserver.InternalView
	}
	st, err := b.store.Stats(b.t.Context())
	if err != nil {
		b.t.Fatal(err)
	}
	st.FileSize, st.WithErrors = 0, 0
	snap.Stats = st
	err = b.store.View(b.t.Context(), func(tx *state.Tx) error {
		if err := tx.ForEachTicket(func(t state.Ticket) error {
			tk := ticket{ID: t.ID, Department: t.Department, Ref: t.Ref, UpstreamStatus: t.UpstreamStatus, HelpdeskStatus: t.HelpdeskStatus,
				UpstreamUpdatedAt: t.UpstreamUpdatedAt, HelpdeskStatusAt: t.HelpdeskStatusAt, ClosedAt: t.ClosedAt, Retired: t.Retired}
			var err error
			if tk.Mirrored, err = tx.Mirrored(t.ID); err != nil {
				return err
			}
			if tk.Own, err = tx.OwnMessages(t.ID); err != nil {
				return err
			}
			es, err := tx.JournalForTicket(t.ID)
			for _, en := range es {
				tk.Journal = append(tk.Journal, []any{en.EventID, en.Kind, en.Payload, en.IdempotencyKey, en.State, en.UpstreamMessageID, en.SentAt, en.MarkedAt})
			}
			snap.Tickets = append(snap.Tickets, tk)
			return err
		}); err != nil {
			return err
		}
		var err error
		if snap.Cursors, err = tx.Cursors(); err != nil {
			return err
		}
		snap.Meta = map[string]string{}
		for _, k := range []string{tbsync.MetaAdapter, tbsync.MetaImportSince} {
			v, _, err := tx.Meta(k)
			if err != nil {
				return err
			}
			snap.Meta[k] = v
		}
		return nil
	})
	if err != nil {
		b.t.Fatal(err)
	}
	if b.zd != nil {
		snap.Helpdesk = b.zd.Tickets()
	} else {
		snap.Helpdesk = b.backend.Tickets()
	}
	for _, id := range []string{b.target, b.other} {
		snap.Upstream = append(snap.Upstream, b.upstream(id))
	}
	out, err := json.MarshalIndent(snap, "", " ")
	if err != nil {
		b.t.Fatal(err)
	}
	return string(out)
}

// lineDiff lists the lines only before or only after holds.
func lineDiff(before, after string) string {
	count := map[string]int{}
	for _, l := range strings.Split(before, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(after, "\n") {
		count[l]--
	}
	var out []string
	for _, l := range strings.Split(before, "\n") {
		if count[l] > 0 {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(after, "\n") {
		if count[l] < 0 {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// on applies h to the requests of route ("GET /path"), matched exactly. h
// is a refserver.Hook or a func(*badEnv) refserver.Hook.
func on(route string, h any) func(*badEnv) refserver.Hook {
	method, path, _ := strings.Cut(route, " ")
	return func(b *badEnv) refserver.Hook { return exact(method, path, build(h, b)) }
}

// onTarget applies h to GET /tickets/{target}.
func onTarget(h any) func(*badEnv) refserver.Hook {
	return func(b *badEnv) refserver.Hook {
		return exact(http.MethodGet, refserver.BasePath+"/tickets/"+b.target, build(h, b))
	}
}

// onPost applies h to POST /tickets/{target}/messages.
func onPost(h any) func(*badEnv) refserver.Hook {
	return func(b *badEnv) refserver.Hook {
		return exact(http.MethodPost, refserver.BasePath+"/tickets/"+b.target+"/messages", build(h, b))
	}
}

func build(h any, b *badEnv) refserver.Hook {
	switch h := h.(type) {
	case refserver.Hook:
		return h
	case func(*badEnv) refserver.Hook:
		return h(b)
	}
	panic(fmt.Sprintf("not a hook: %T", h))
}

func exact(method, path string, h refserver.Hook) refserver.Hook {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.Method == method && r.URL.Path == path {
			h(w, r, next)
			return
		}
		next.ServeHTTP(w, r)
	}
}

// answer answers itself, without asking the server.
func answer(status int, contentType, body string) refserver.Hook {
	return func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		w.Write([]byte(body))
	}
}

// edit passes the server's answer through fn.
func edit(fn func(body []byte) []byte) refserver.Hook {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := fn(rec.Body.Bytes())
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		w.Write(body)
	}
}

func replace(old, new string) refserver.Hook {
	return edit(func(body []byte) []byte {
		if !bytes.Contains(body, []byte(old)) {
			panic(fmt.Sprintf("the answer holds no %q: %s", old, body))
		}
		return bytes.ReplaceAll(body, []byte(old), []byte(new))
	})
}

// editJSON passes the server's answer, as a JSON object, through fn.
func editJSON(fn func(b *badEnv, m map[string]any)) func(*badEnv) refserver.Hook {
	return func(b *badEnv) refserver.Hook {
		return edit(func(body []byte) []byte {
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				panic(err)
			}
			fn(b, m)
			out, err := json.Marshal(m)
			if err != nil {
				panic(err)
			}
			return out
		})
	}
}

func item(m map[string]any, list string, i int) map[string]any {
	return m[list].([]any)[i].(map[string]any)
}

// last returns the newest message of a thread answer.
func last(m map[string]any) map[string]any {
	ms := m["messages"].([]any)
	return ms[len(ms)-1].(map[string]any)
}

// retime rewrites every timestamp of a thread answer with form.
func retime(m map[string]any, form func(time.Time) string) {
	objs := []map[string]any{m["ticket"].(map[string]any)}
	for _, x := range m["messages"].([]any) {
		objs = append(objs, x.(map[string]any))
	}
	for _, o := range objs {
		for _, k := range []string{"created_at", "updated_at"} {
			s, ok := o[k].(string)
			if !ok {
				continue
			}
			t, err := guestapi.ParseTime(s)
			if err != nil {
				panic(err)
			}
			o[k] = form(t)
		}
	}
}

func htmlHandler(status int, page string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		w.Write([]byte(page))
	})
}
