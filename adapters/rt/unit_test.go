package rt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

// These tests need no RT: configuration, rendering and RT's answers as a
// fake serves them. The real RT is in the rt_test package.

const testToken = "1-31-0123456789abcdef0123456789abcdef"

func TestLoadConfigDefaults(t *testing.T) {
	c, err := LoadConfig(t.Context(), envconfig.MapLookuper(map[string]string{
		"TICKETBRIDGE_RT_URL": "http://127.0.0.1:8080/", "TICKETBRIDGE_RT_TOKEN": testToken,
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{URL: adapters.ParseURL("http://127.0.0.1:8080/"), Queues: Queues{}, Token: testToken, Queue: "General", IDField: "Guest Request ID",
		SentField: "Guest Request Sent", SendComments: true, Timeout: 30 * time.Second, Overlap: 2 * time.Minute}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("LoadConfig = %#v\nwant %#v", c, want)
	}
	c, err = LoadConfig(t.Context(), envconfig.MapLookuper(map[string]string{
		"TICKETBRIDGE_RT_URL": "https://rt.example.com/rt/REST/2.0", "TICKETBRIDGE_RT_USER": "bridge", "TICKETBRIDGE_RT_PASSWORD": "pw",
		"TICKETBRIDGE_RT_SEND_COMMENTS": "false", "TICKETBRIDGE_RT_SENT_FIELD": "none", "TICKETBRIDGE_RT_QUEUES": "spa = Spa , housekeeping=House Keeping",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.SendComments || c.SentField != SentFieldOff {
		t.Errorf("SEND_COMMENTS=false, SENT_FIELD=none gave %+v", c)
	}
	a, err := New(t.Context(), c, adapters.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if a.c.base != "https://rt.example.com/rt/REST/2.0" {
		t.Errorf("base %q", a.c.base)
	}
	if got := a.queueFor("housekeeping"); got != "House Keeping" {
		t.Errorf("queueFor(housekeeping) = %q", got)
	}
	if got := a.queueFor("SPA"); got != "Spa" {
		t.Errorf("queueFor(SPA) = %q", got)
	}
	if got := a.queueFor("kitchen"); got != "General" {
		t.Errorf("queueFor(kitchen) = %q", got)
	}
	if a.sentOn() {
		t.Error("SENT_FIELD=none left the delivery record on")
	}
}

func TestValidateNamesTheVariable(t *testing.T) {
	ok := Config{URL: adapters.ParseURL("https://rt"), Token: testToken}
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no URL", func(c *Config) { c.URL = adapters.ParseURL("") }, "TICKETBRIDGE_RT_URL is not set"},
		{"bad scheme", func(c *Config) { c.URL = adapters.ParseURL("ftp://rt") }, "TICKETBRIDGE_RT_URL \"ftp://rt\": the scheme must be https (or http to a loopback address)"},
		{"credentials in URL", func(c *Config) { c.URL = adapters.ParseURL("http://bridge:secret@rt") }, "TICKETBRIDGE_RT_URL carries credentials"},
		{"query", func(c *Config) { c.URL = adapters.ParseURL("https://rt/?x=1") }, "remove the query"},
		{"no host", func(c *Config) { c.URL = adapters.ParseURL("http:///rt") }, "has no host"},
		{"no auth", func(c *Config) { c.Token = "" }, "TICKETBRIDGE_RT_TOKEN is not set"},
		{"token and password", func(c *Config) { c.Password = "pw" }, "TICKETBRIDGE_RT_TOKEN and TICKETBRIDGE_RT_PASSWORD are both set"},
		{"user alone", func(c *Config) { c.Token, c.User = "", "bridge" }, "TICKETBRIDGE_RT_USER is set without TICKETBRIDGE_RT_PASSWORD"},
		{"password alone", func(c *Config) { c.Token, c.Password = "", "pw" }, "TICKETBRIDGE_RT_PASSWORD is set without TICKETBRIDGE_RT_USER"},
		{"token with space", func(c *Config) { c.Token = "1-31-ab cd" }, "TICKETBRIDGE_RT_TOKEN contains white space"},
		{"field with brace", func(c *Config) { c.IDField = "Guest {ID}" }, "TICKETBRIDGE_RT_ID_FIELD \"Guest {ID}\""},
		{"same fields", func(c *Config) { c.SentField = "guest request id" }, "TICKETBRIDGE_RT_SENT_FIELD \"guest request id\" is the same field"},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, "TICKETBRIDGE_RT_TIMEOUT -1s is negative"},
		{"negative overlap", func(c *Config) { c.Overlap = -time.Minute }, "TICKETBRIDGE_RT_OVERLAP -1m0s is negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			c.edit(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate = %v; want an error containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "0123456789abcdef") {
				t.Errorf("the error shows a credential: %v", err)
			}
			if _, err := New(t.Context(), cfg, adapters.Deps{}); err == nil {
				t.Error("New accepted what Validate refuses")
			}
		})
	}
	if err := ok.Validate(); err != nil {
		t.Errorf("a good configuration: %v", err)
	}
	// The queues are parsed as they are read, and say so naming the
	// variable.
	for queues, want := range map[string]string{
		"spa":         "TICKETBRIDGE_RT_QUEUES item \"spa\" has no '='",
		"spa=":        "has no queue after '='",
		"=Spa":        "has no department before '='",
		"spa=A,spa=B": "names department \"spa\" twice",
	} {
		_, err := LoadConfig(t.Context(), envconfig.MapLookuper(map[string]string{
			"TICKETBRIDGE_RT_URL": "https://rt", "TICKETBRIDGE_RT_TOKEN": testToken, "TICKETBRIDGE_RT_QUEUES": queues,
		}))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("TICKETBRIDGE_RT_QUEUES=%q: %v; want an error containing %q", queues, err, want)
		}
	}
}

func TestConfigHidesCredentials(t *testing.T) {
	for _, c := range []Config{
		{URL: adapters.ParseURL("https://rt"), Token: testToken, User: "bridge"},
		{URL: adapters.ParseURL("https://rt"), User: "bridge", Password: "s3cret-Passw0rd"},
	} {
		var logged strings.Builder
		slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "rt", c)
		for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v", c, c, c), logged.String()} {
			if strings.Contains(s, "0123456789abcdef") || strings.Contains(s, "s3cret") {
				t.Errorf("a credential shows: %s", s)
			}
			if !strings.Contains(s, "bridge") || !strings.Contains(s, "redacted") {
				t.Errorf("want the user named and the secret marked redacted: %s", s)
			}
		}
	}
}

func TestRenderMessage(t *testing.T) {
	at := time.Date(2026, 3, 14, 9, 26, 53, 0, time.FixedZone("CET", 3600))
	pub := adapters.Message{UpstreamID: "3f2a8c1e-0000-4000-8000-000000000001", AuthorType: guestapi.AuthorGuest,
		AuthorName: "Zoë  Guest\n", Body: "Two towels,\r\nplease.\n\n", Public: true, CreatedAt: at}
	got := renderMessage(pub)
	want := "Zoë Guest (guest) · 2026-03-14 08:26 UTC\n\nTwo towels,\nplease.\n\n[ticketbridge message 3f2a8c1e-0000-4000-8000-000000000001]\n"
	if got != want {
		t.Errorf("renderMessage = %q\nwant %q", got, want)
	}
	note := pub
	note.Public, note.AuthorType, note.AuthorName = false, guestapi.AuthorSystem, ""
	if got := renderMessage(note); !strings.HasPrefix(got, "(no name) (system) · 2026-03-14 08:26 UTC · internal note\n\n") {
		t.Errorf("a note renders as %q", got)
	}
	if id, ok := parseMarker(got); !ok || id != pub.UpstreamID {
		t.Errorf("parseMarker(renderMessage) = %q, %v", id, ok)
	}
}

func TestParseMarker(t *testing.T) {
	cases := []struct {
		body string
		id   string
	}{
		// A body as the adapter wrote it before it used the shared
		// marker of package adapters: tickets in RT still hold these.
		{"Grace (guest) · 2026-03-14 09:33 UTC\n\nhi\n\n[ticketbridge message 6f1c2a3e-0000-4000-8000-000000000001]\n", "6f1c2a3e-0000-4000-8000-000000000001"},
		{"x\n\n[ticketbridge message abc-1]\n", "abc-1"},
		{"x\r\n\r\n[ticketbridge message abc-1]  \r\n\r\n", "abc-1"},
		{"[ticketbridge message abc-1]", "abc-1"},
		{"  [ticketbridge message a.b:c_d]", "a.b:c_d"},
		{"x\n> [ticketbridge message abc-1]", ""},
		{"[ticketbridge message abc-1]\nthanks", ""},
		{"see [ticketbridge message abc-1]", ""},
		{"x\n[ticketbridge message abc 1]", ""},
		{"x\n[ticketbridge message ]", ""},
		{"x\n[ticketbridge message -abc]", ""},
		{"x\n[Ticketbridge message abc]", ""},
		{"x\n[ticketbridge ticket abc]", ""},
		{"x\n[ticketbridge sent ev-1 abc]", ""},
		{"", ""},
		{"x\n[ticketbridge message " + strings.Repeat("a", maxIDLen+1) + "]", ""},
	}
	for _, c := range cases {
		id, ok := parseMarker(c.body)
		if ok != (c.id != "") || id != c.id {
			t.Errorf("parseMarker(%q) = %q, %v; want %q", c.body, id, ok, c.id)
		}
	}
}

// FuzzMarker checks that any body with any well-formed id renders to a
// text whose marker gives the id back, and that no text makes parseMarker
// misbehave.
func FuzzMarker(f *testing.F) {
	f.Add("Two towels, please.", "3f2a8c1e-0000-4000-8000-000000000001", true)
	f.Add("[ticketbridge message other]", "x", false)
	f.Add("line\r\n> quoted\r\n", "a.b", true)
	f.Add("", "A", false)
	f.Fuzz(func(t *testing.T, body, id string, public bool) {
		if got, ok := parseMarker(body); ok && !idRE.MatchString(got) {
			t.Fatalf("parseMarker(%q) = %q, not a well-formed id", body, got)
		}
		if checkID("id", id) != nil {
			return
		}
		text := renderMessage(adapters.Message{UpstreamID: id, AuthorType: guestapi.AuthorGuest, AuthorName: "A", Body: body, Public: public})
		if got, ok := parseMarker(text); !ok || got != id {
			t.Fatalf("renderMessage then parseMarker gave %q, %v; want %q\n%q", got, ok, id, text)
		}
		if strings.TrimSpace(body) != "" && !strings.Contains(text, strings.TrimRight(normalizeNewlines(body), "\n")) {
			t.Fatalf("the body is not kept verbatim in %q", text)
		}
	})
}

func TestCheckID(t *testing.T) {
	for _, id := range []string{"", "a b", "a]", "-a", "ä", strings.Repeat("a", maxIDLen+1), "a\n"} {
		if err := checkID("id", id); !errors.Is(err, adapters.ErrInvalid) {
			t.Errorf("checkID(%q) = %v, want ErrInvalid", id, err)
		}
	}
	for _, id := range []string{"3f2a8c1e-0000-4000-8000-000000000001", "A", "a.b:c_d-1"} {
		if err := checkID("id", id); err != nil {
			t.Errorf("checkID(%q) = %v", id, err)
		}
	}
}

func TestHTMLToText(t *testing.T) {
	cases := []struct{ in, want string }{
		{"<p>Hello <b>Ada</b>,</p><p>on its way &amp; soon.</p>", "Hello Ada,\n\non its way & soon."},
		{"line one<br>line two<br/>line three", "line one\nline two\nline three"},
		{"<p>List:</p><ul><li>a</li><li>b &lt;c&gt;</li></ul>", "List:\n\n- a\n- b <c>"},
		{"<div>a\nb</div><!-- x --><style>p{}</style><script>x()</script>", "a b"},
		{"&nbsp;&quot;quoted&quot;&#39;", "\"quoted\"'"},
		{"plain text", "plain text"},
	}
	for _, c := range cases {
		if got := htmlToText(c.in); got != c.want {
			t.Errorf("htmlToText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSubjectAndTicketText(t *testing.T) {
	tk := adapters.Ticket{UpstreamID: "u-1", Department: "housekeeping", Origin: guestapi.OriginGuest,
		TaskDescription: "\n  Extra towels  \nroom 12", Comments: "VIP", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if got := subject(tk); got != "Extra towels" {
		t.Errorf("subject = %q", got)
	}
	long := tk
	long.TaskDescription = strings.Repeat("ü", 300)
	if got := subject(long); len([]rune(got)) != maxSubject || !strings.HasSuffix(got, "…") {
		t.Errorf("a long subject became %d runes: %q", len([]rune(got)), got)
	}
	long.TaskDescription = " "
	if got := subject(long); got != "Guest request u-1" {
		t.Errorf("an empty description's subject = %q", got)
	}
	text := renderTicket(tk)
	for _, want := range []string{"Guest request u-1", "department housekeeping", "origin guest", "Created 2026-01-02 03:04 UTC", "Extra towels  \nroom 12", "Comment on the console card:\nVIP"} {
		if !strings.Contains(text, want) {
			t.Errorf("the ticket text lacks %q:\n%s", want, text)
		}
	}
}

// fakeRT serves what Check reads: the bridge's user and the queues; and
// what Changes reads (see changes_test.go).
type fakeRT struct {
	mu       sync.Mutex
	calls    map[string]int
	fail     map[string][]int // path -> statuses to answer first, in order
	hang     map[string]int   // path -> how many first requests hang until the client gives up
	auth     string
	queueCFs []string
	create   bool
	changes  changesRT // what Changes reads; see changes_test.go
}

func newFakeRT() *fakeRT {
	return &fakeRT{calls: map[string]int{}, fail: map[string][]int{}, hang: map[string]int{},
		auth: "token " + testToken, queueCFs: []string{DefaultIDField, DefaultSentField}, create: true}
}

func (f *fakeRT) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls[r.URL.Path]++
	var status int
	if fs := f.fail[r.URL.Path]; len(fs) > 0 {
		status, f.fail[r.URL.Path] = fs[0], fs[1:]
	}
	hang := f.hang[r.URL.Path] > 0
	if hang {
		f.hang[r.URL.Path]--
	}
	f.mu.Unlock()
	if hang {
		<-r.Context().Done() // until the client's timeout gives up
		return
	}
	if r.Header.Get("Authorization") != f.auth {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "Authorization required (you sent %s)", r.Header.Get("Authorization"))
		return
	}
	if status != 0 {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(status)
		fmt.Fprint(w, `{"message":"busy"}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/REST/2.0/user/31":
		fmt.Fprint(w, `{"id":31,"Name":"ticketbridge","RealName":"ticketbridge","type":"user"}`)
	case strings.HasPrefix(r.URL.Path, "/REST/2.0/queue/"):
		name := strings.TrimPrefix(r.URL.Path, "/REST/2.0/queue/")
		if name != "General" && name != "Spa" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"message":"Not Found"}`)
			return
		}
		var cfs []map[string]any
		for i, n := range f.queueCFs {
			cfs = append(cfs, map[string]any{"id": fmt.Sprint(i + 2), "name": n, "type": "customfield"})
		}
		links := []map[string]any{{"ref": "self", "type": "queue"}}
		if f.create {
			links = append(links, map[string]any{"ref": "create", "type": "ticket"})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"id": 1, "Name": name, "TicketCustomFields": cfs, "_hyperlinks": links})
	default:
		f.mu.Lock()
		done := f.serveChanges(w, r)
		f.mu.Unlock()
		if !done {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"message":"Not Found"}`)
		}
	}
}

func (f *fakeRT) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[path]
}

// openFake returns an adapter on the fake whose waits are recorded, not
// slept.
func openFake(t *testing.T, f *fakeRT, cfg Config) (*Adapter, *[]time.Duration) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg.URL = adapters.ParseURL(srv.URL)
	if cfg.Token == "" && cfg.User == "" {
		cfg.Token = testToken
	}
	var mu sync.Mutex
	waits := &[]time.Duration{}
	a, err := NewWithOptions(t.Context(), cfg, adapters.Deps{}, Options{
		HTTP:    &http.Client{Timeout: time.Minute}, // only a hang's end: no test here waits for it
		Backoff: httpretry.Backoff{Base: time.Millisecond, Max: time.Millisecond},
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			*waits = append(*waits, d)
			mu.Unlock()
			return ctx.Err()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a, waits
}

func TestCheckRetriesBusyRT(t *testing.T) {
	f := newFakeRT()
	f.fail["/REST/2.0/user/31"] = []int{503, 502}
	f.fail["/REST/2.0/queue/General"] = []int{429}
	a, waits := openFake(t, f, Config{})
	if err := a.Check(t.Context()); err != nil {
		t.Fatalf("Check through a busy RT: %v", err)
	}
	if n := f.count("/REST/2.0/user/31"); n != 3 {
		t.Errorf("the user was asked %d times, want 3 (two refusals, one answer)", n)
	}
	if n := f.count("/REST/2.0/queue/General"); n != 2 {
		t.Errorf("the queue was asked %d times, want 2", n)
	}
	if len(*waits) != 3 {
		t.Errorf("waited %d times before retrying, want 3: %v", len(*waits), *waits)
	}
}

// TestSlowRTTimesOutAndIsRetried: an answer slower than the client's
// timeout is retried. In a bubble, on in-memory connections: the timeout
// ends the held request on the bubble's clock, and the other answers take
// none of it, however busy the machine.
func TestSlowRTTimesOutAndIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRT()
		f.hang["/REST/2.0/user/31"] = 1
		tr := testutil.PipeServer(t, f)
		a, err := NewWithOptions(t.Context(), Config{URL: adapters.ParseURL(testutil.PipeURL), Token: testToken}, adapters.Deps{}, Options{
			HTTP:  &http.Client{Timeout: 100 * time.Millisecond, Transport: tr},
			Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Check(t.Context()); err != nil {
			t.Fatalf("Check after one answer too slow: %v", err)
		}
		if n := f.count("/REST/2.0/user/31"); n != 2 {
			t.Errorf("the user was asked %d times, want 2", n)
		}
	})
}

func TestCheckRefusedCredentials(t *testing.T) {
	f := newFakeRT()
	f.auth = "token 1-31-ffffffffffffffffffffffffffffffff"
	var logged strings.Builder
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	a, err := New(t.Context(), Config{URL: adapters.ParseURL(srv.URL), Token: testToken}, adapters.Deps{Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	err = a.Check(t.Context())
	if !errors.Is(err, adapters.ErrAuth) || !strings.Contains(err.Error(), "TICKETBRIDGE_RT_TOKEN") {
		t.Fatalf("Check with a refused token: %v; want ErrAuth naming the variable", err)
	}
	if strings.Contains(err.Error(), "0123456789abcdef") || strings.Contains(logged.String(), "0123456789abcdef") {
		t.Errorf("the token shows in the error or the log (RT echoed it):\n%v\n%s", err, logged.String())
	}
	if n := f.count("/REST/2.0/user/31"); n != 1 {
		t.Errorf("a refused token was tried %d times, want once", n)
	}
}

func TestCheckListsEveryProblem(t *testing.T) {
	f := newFakeRT()
	f.queueCFs = []string{"Something Else"}
	f.create = false
	a, _ := openFake(t, f, Config{Queues: Queues{"spa": "Spa", "pool": "Pool"}})
	err := a.Check(t.Context())
	if err == nil {
		t.Fatal("Check passed")
	}
	for _, want := range []string{
		`queue "Pool": RT has no such queue, or the user ticketbridge lacks the right SeeQueue`,
		`queue "General": the user ticketbridge lacks the right CreateTicket`,
		`custom field "Guest Request ID" (TICKETBRIDGE_RT_ID_FIELD) does not apply to the queue(s) "General", "Spa"`,
		`Name "Guest Request ID", Type "Enter one value", Applies to "Tickets"`,
		`custom field "Guest Request Sent" (TICKETBRIDGE_RT_SENT_FIELD)`,
		`Type "Enter multiple values"`,
		"grant ticketbridge SeeCustomField and ModifyCustomField",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check's error lacks %q:\n%v", want, err)
		}
	}
	// With the delivery record off, the second field is not asked for.
	f.queueCFs = []string{DefaultIDField}
	f.create = true
	b, _ := openFake(t, f, Config{SentField: SentFieldOff})
	if err := b.Check(t.Context()); err != nil {
		t.Errorf("Check with SENT_FIELD=none and the ID field present: %v", err)
	}
}

func TestTokenOfUnusualForm(t *testing.T) {
	f := newFakeRT()
	f.auth = "token opaque-token"
	a, _ := openFake(t, f, Config{Token: "opaque-token"})
	if err := a.Check(t.Context()); err == nil || !strings.Contains(err.Error(), "set TICKETBRIDGE_RT_USER") {
		t.Errorf("Check with a token that names no user: %v", err)
	}
}

func TestRefsAndCursors(t *testing.T) {
	a, err := New(t.Context(), Config{URL: adapters.ParseURL("http://127.0.0.1:1"), Token: testToken}, adapters.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	a.c.http.HTTP = &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		calls.Add(1)
		return nil, errors.New("no network in this test")
	})}
	ctx := t.Context()
	for _, ref := range []adapters.Ref{"", "abc", "-1", "0", "12x"} {
		if err := a.SetStatus(ctx, ref, guestapi.StatusDone); !errors.Is(err, adapters.ErrNotFound) {
			t.Errorf("SetStatus(%q) = %v, want ErrNotFound", ref, err)
		}
	}
	for _, st := range []guestapi.Status{"", "archived"} {
		if err := a.SetStatus(ctx, "12", st); !errors.Is(err, adapters.ErrInvalid) {
			t.Errorf("SetStatus(%q) = %v, want ErrInvalid", st, err)
		}
	}
	if _, err := a.Append(ctx, "12", []adapters.Message{{UpstreamID: "m", Body: " \n"}}); !errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("Append of an empty body = %v, want ErrInvalid", err)
	}
	if _, err := a.EnsureTicket(ctx, adapters.Ticket{UpstreamID: "a b"}); !errors.Is(err, adapters.ErrInvalid) {
		t.Errorf("EnsureTicket with a bad id = %v, want ErrInvalid", err)
	}
	for _, c := range []adapters.Cursor{"x", "-5", "1.5"} {
		if _, _, err := a.Changes(ctx, c); !errors.Is(err, adapters.ErrInvalid) {
			t.Errorf("Changes(%q) = %v, want ErrInvalid", c, err)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("bad input reached the network %d times", n)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestDefaultStatusMap(t *testing.T) {
	m := DefaultStatusMap()
	for _, s := range guestapi.Statuses() {
		if m.ToHelpdesk[s] == "" {
			t.Errorf("upstream %s maps to no RT status", s)
		}
	}
	for _, h := range []string{"new", "open", "stalled", "resolved", "rejected", "deleted"} {
		up, ok := m.Up(h)
		if !ok || !up.Settable() {
			t.Errorf("RT %s maps to %q, %v; want a settable status", h, up, ok)
		}
	}
	over := m.Override(adapters.Deps{StatusFromHelpdesk: map[string]guestapi.Status{"stalled": guestapi.StatusAssigned}})
	if got, _ := over.Up("stalled"); got != guestapi.StatusAssigned {
		t.Errorf("an override of stalled gave %q", got)
	}
}

// TestTicketURL: RT's Display page of the ticket number, below the
// configured address without /REST/2.0 and without credentials; nothing
// for a ref that is no ticket number.
func TestTicketURL(t *testing.T) {
	for base, want := range map[string]string{
		"http://127.0.0.1:8080/":             "http://127.0.0.1:8080/Ticket/Display.html?id=17",
		"https://RT.example.com/rt/REST/2.0": "https://rt.example.com/rt/Ticket/Display.html?id=17",
	} {
		c, err := LoadConfig(t.Context(), envconfig.MapLookuper(map[string]string{"TICKETBRIDGE_RT_URL": base, "TICKETBRIDGE_RT_TOKEN": testToken}))
		if err != nil {
			t.Fatal(err)
		}
		a, err := New(t.Context(), c, adapters.Deps{})
		if err != nil {
			t.Fatal(err)
		}
		if got := adapters.TicketURL(a, "17"); got != want {
			t.Errorf("%s: TicketURL = %q, want %q", base, got, want)
		}
		if got := adapters.TicketURL(a, "seventeen"); got != "" {
			t.Errorf("%s: TicketURL of no ticket number = %q", base, got)
		}
	}
}
