package zendesk_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"strconv"
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

// env is a fake Zendesk account on loopback and what a test needs to open
// adapters on it.
type env struct {
	t     testing.TB
	fake  *zendeskfake.Server
	clock *zendeskfake.Clock
	srv   *httptest.Server
	logs  *testutil.Buffer

	mu     sync.Mutex
	agents map[string]int64
}

func newEnv(t testing.TB, opts zendeskfake.Options) *env {
	t.Helper()
	clock := zendeskfake.NewClock(time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC))
	opts.Email, opts.Token, opts.Now = testEmail, testToken, clock.Now
	fake := zendeskfake.New(opts)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return &env{t: t, fake: fake, clock: clock, srv: srv, logs: &testutil.Buffer{}, agents: map[string]int64{}}
}

func (e *env) config() zendesk.Config {
	return zendesk.Config{Common: saas.Common{URL: adapters.ParseURL(e.srv.URL)}, Email: testEmail, Token: testToken}
}

// options make the adapter wait on the fake's clock: a wait advances it.
func (e *env) options() zendesk.Options {
	return zendesk.Options{
		HTTP:    e.srv.Client(),
		Backoff: httpretry.Backoff{Rand: func() float64 { return 0.5 }},
		Sleep: func(ctx context.Context, d time.Duration) error {
			e.clock.Advance(d)
			return ctx.Err()
		},
		Now: e.clock.Now,
	}
}

func (e *env) open(t testing.TB, cfg zendesk.Config) *zendesk.Adapter {
	t.Helper()
	a, err := zendesk.New(cfg, adapters.Deps{Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, e.options())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

// settle moves the clock past the minute the export leaves out.
func (e *env) settle(testing.TB) { e.clock.Advance(61 * time.Second) }

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
			e := newEnv(t, tc.opts)
			adaptertest.Run(t, adaptertest.Harness{
				New:        func(t testing.TB) adapters.Helpdesk { return e.open(t, e.config()) },
				Agent:      agent{e},
				Status:     zendesk.DefaultStatusMap(),
				UnknownRef: "999999",
				Settle:     e.settle,
				Late: func(t testing.TB, act func()) {
					now := e.clock.Now()
					e.clock.Set(now.Add(-30 * time.Second))
					act()
					e.clock.Set(now.Add(time.Second))
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
			})
			if bytes.Contains([]byte(e.logs.String()), []byte(testToken)) {
				t.Errorf("the token appears in the adapter's log")
			}
		})
	}
}
