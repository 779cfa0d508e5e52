package zendesk_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/adaptertest"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk/zendeskfake"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

const (
	testEmail = "bridge@hotel.example"
	testToken = "zd-token-9f8e7d6c5b4a39281706"
)

// env is a fake Zendesk account and what a test needs to open adapters on
// it.
type env struct {
	t      testing.TB
	fake   *zendeskfake.Server
	url    string
	hc     *http.Client
	bubble bool
	logs   *testutil.Buffer

	mu     sync.Mutex
	agents map[string]int64
	groups zendesk.Groups
}

// newEnv serves a fake account on loopback, for a test in which no time
// need pass: the adapter's waits between attempts return at once.
func newEnv(t testing.TB, opts zendeskfake.Options) *env {
	t.Helper()
	opts.Email, opts.Token = testEmail, testToken
	opts.TicketFields = append(opts.TicketFields, dueField)
	fake := zendeskfake.New(opts)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return &env{t: t, fake: fake, url: srv.URL, hc: srv.Client(), logs: &testutil.Buffer{}, agents: map[string]int64{}}
}

// newBubbleEnv serves a fake account on in-memory connections, for a test
// in a testing/synctest bubble: the adapter's waits and [env.settle] pass
// the time of both.
func newBubbleEnv(t testing.TB, opts zendeskfake.Options) *env {
	t.Helper()
	opts.Email, opts.Token = testEmail, testToken
	opts.TicketFields = append(opts.TicketFields, dueField)
	fake := zendeskfake.New(opts)
	hc := &http.Client{Transport: testutil.PipeServer(t, fake)}
	return &env{t: t, fake: fake, url: testutil.PipeURL, hc: hc, bubble: true, logs: &testutil.Buffer{}, agents: map[string]int64{}}
}

// dueField is the custom date field the tests' accounts hold the due
// date in.
var dueField = zendeskfake.Field{ID: 360009001, Title: "Due date", Type: "date"}

// config has the account's address and credentials, its due date field,
// and a group for each of two departments (made on first use).
func (e *env) config() zendesk.Config {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.groups == nil {
		e.groups = zendesk.Groups{"housekeeping": e.fake.AddGroup("Housekeeping"), "maintenance": e.fake.AddGroup("Maintenance")}
	}
	return zendesk.Config{Common: saas.Common{URL: adapters.ParseURL(e.url)}, Email: testEmail, Token: testToken,
		Groups: e.groups, DueField: dueField.ID}
}

// options make the adapter wait on the bubble's clock, or not at all on
// loopback.
func (e *env) options() zendesk.Options {
	o := zendesk.Options{HTTP: e.hc, Backoff: httpretry.Backoff{Rand: func() float64 { return 0.5 }}}
	if !e.bubble {
		o.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	}
	return o
}

func (e *env) open(t testing.TB, cfg zendesk.Config) *zendesk.Adapter {
	t.Helper()
	a, err := zendesk.New(cfg, adapters.Deps{Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, e.options())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

// settle lets the minute the export leaves out pass; in a bubble only.
func (e *env) settle(testing.TB) { time.Sleep(61 * time.Second) }

func (e *env) agent(name string) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if id, ok := e.agents[name]; ok {
		return id
	}
	id := e.fake.AddAgent(name)
	e.agents[name] = id
	return id
}

func ticketID(ref adapters.Ref) (int64, error) {
	id, err := strconv.ParseInt(string(ref), 10, 64)
	if err != nil {
		return 0, adapters.ErrNotFound
	}
	return id, nil
}

// agent plays the support team on the fake through its agent methods.
type agent struct{ e *env }

func (a agent) Reply(_ context.Context, ref adapters.Ref, author, body string) error {
	id, err := ticketID(ref)
	if err != nil {
		return err
	}
	_, err = a.e.fake.Reply(id, a.e.agent(author), body)
	return err
}

func (a agent) Note(_ context.Context, ref adapters.Ref, author, body string) error {
	id, err := ticketID(ref)
	if err != nil {
		return err
	}
	_, err = a.e.fake.Note(id, a.e.agent(author), body)
	return err
}

// MakeTicket makes a ticket as agent Anna does in the agent interface:
// no external_id, no group (the account's default).
func (a agent) MakeTicket(_ context.Context, subject, body string) (adapters.Ref, error) {
	return saas.RefOf(a.e.fake.CreateTicket(a.e.agent("Anna"), subject, body, "")), nil
}

func (a agent) SetStatus(_ context.Context, ref adapters.Ref, author, status string) error {
	id, err := ticketID(ref)
	if err != nil {
		return err
	}
	return a.e.fake.SetStatus(id, a.e.agent(author), status)
}

func (a agent) Attach(_ context.Context, ref adapters.Ref, author, body string, public bool, files []string) error {
	id, err := ticketID(ref)
	if err != nil {
		return err
	}
	_, err = a.e.fake.Update(id, a.e.agent(author), zendeskfake.AgentUpdate{Body: body, Public: public, Attachments: files})
	return err
}

func (a agent) Read(_ context.Context, ref adapters.Ref) (adaptertest.Snapshot, error) {
	id, err := ticketID(ref)
	if err != nil {
		return adaptertest.Snapshot{}, err
	}
	t, ok := a.e.fake.Ticket(id)
	if !ok {
		return adaptertest.Snapshot{}, adapters.ErrNotFound
	}
	snap := adaptertest.Snapshot{Status: t.Status}
	for i, c := range t.Comments {
		if i == 0 {
			continue // the description
		}
		snap.Messages = append(snap.Messages, adaptertest.SnapshotMessage{Text: c.Body, Public: c.Public})
	}
	return snap, nil
}

// ReadFields reads the group, the subject (without the "[department] "
// prefix it is written with) and the rating tag. The due date field holds
// a day, which the case cannot compare with the due time; TestUpdate
// checks it.
func (a agent) ReadFields(_ context.Context, ref adapters.Ref) (adaptertest.HeldFields, error) {
	id, err := ticketID(ref)
	if err != nil {
		return adaptertest.HeldFields{}, err
	}
	t, ok := a.e.fake.Ticket(id)
	if !ok {
		return adaptertest.HeldFields{}, adapters.ErrNotFound
	}
	h := adaptertest.HeldFields{Queue: strconv.FormatInt(t.GroupID, 10), Title: t.Subject,
		Holds: adapters.FieldSet(adapters.FieldDepartment | adapters.FieldTitle | adapters.FieldRating)}
	if _, rest, ok := strings.Cut(t.Subject, "] "); ok && strings.HasPrefix(t.Subject, "[") {
		h.Title = rest
	}
	for _, tag := range t.Tags {
		if v, ok := strings.CutPrefix(tag, "guest_rating_"); ok {
			r, err := strconv.ParseFloat(strings.ReplaceAll(v, "_", "."), 64)
			if err != nil {
				return h, fmt.Errorf("rating tag %q: %w", tag, err)
			}
			h.Rating = &r
		}
	}
	return h, nil
}

// faults makes the fake fail as Zendesk does, for the suite's fault cases.
type faults struct{ e *env }

func (f faults) RefuseCredentials(testing.TB) {
	f.e.fake.Inject(zendeskfake.Fault{Status: 401, Times: 1 << 30, Body: `{"error":"Couldn't authenticate you"}`})
}

func (f faults) Unavailable(testing.TB) {
	f.e.fake.Inject(zendeskfake.Fault{Status: 503, Times: 1 << 30, Body: `{"error":"Unavailable","echo":"` + testEmail + `/token:` + testToken + `"}`})
}

func (f faults) RateLimit(_ testing.TB, n int) {
	f.e.fake.Inject(zendeskfake.Fault{Status: 429, RetryAfter: "7", Times: n})
}

func (f faults) Restore(testing.TB) { f.e.fake.ClearFaults() }

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts zendeskfake.Options
	}{
		{"DocumentedLimits", zendeskfake.Options{}},
		{"SmallPages", zendeskfake.Options{MaxPageSize: 1, EventsPageSize: 1, ExportRequests: zendeskfake.RateLimit{Requests: 2, Window: time.Minute}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			adaptertest.RunInBubbles(t, func(t *testing.T) adaptertest.Harness {
				e := newBubbleEnv(t, tc.opts)
				t.Cleanup(func() {
					if bytes.Contains([]byte(e.logs.String()), []byte(testToken)) {
						t.Errorf("the token appears in the adapter's log")
					}
				})
				return harness(e)
			})
		})
	}
}

func harness(e *env) adaptertest.Harness {
	return adaptertest.Harness{
		New:        func(t testing.TB) adapters.Helpdesk { return e.open(t, e.config()) },
		Agent:      agent{e},
		Status:     zendesk.DefaultStatusMap(),
		UnknownRef: "999999",
		Settle:     e.settle,
		Late: func(t testing.TB, act func()) {
			e.fake.CommitLate(30*time.Second, act)
			time.Sleep(time.Second)
		},
		Caps:    adaptertest.Caps{MarkSent: true, AuthorName: true, Events: true},
		Faults:  faults{e},
		Secrets: []string{testToken},
		Logs:    e.logs.String,
		Archive: func(t testing.TB, ref adapters.Ref) {
			id := mustRef(t, ref)
			if tk, _ := e.fake.Ticket(id); tk.Status != "closed" {
				if err := e.fake.Close(id); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.fake.Archive(id); err != nil {
				t.Fatal(err)
			}
		},
	}
}
