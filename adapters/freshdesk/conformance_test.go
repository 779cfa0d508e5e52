package freshdesk_test

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
	"github.com/ticketbridge/ticketbridge/adapters/freshdesk"
	"github.com/ticketbridge/ticketbridge/adapters/freshdesk/freshdeskfake"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

const testKey = "fd-key-Zq8mN3vR7tW2xY5a"

// env is a fake Freshdesk and what a test needs to open adapters on it.
type env struct {
	t      testing.TB
	fake   *freshdeskfake.Server
	url    string
	hc     *http.Client
	bubble bool
	logs   *testutil.Buffer
	opts   freshdeskfake.Options

	mu     sync.Mutex
	agents map[string]int64
	sleeps []time.Duration
	groups freshdesk.Groups
}

// newEnv serves a fake on loopback, for a test in which no time need
// pass: the adapter's waits between attempts are recorded and return at
// once.
func newEnv(t testing.TB, opts freshdeskfake.Options) *env {
	t.Helper()
	opts.APIKey = testKey
	fake := freshdeskfake.New(opts)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return &env{t: t, fake: fake, url: srv.URL, hc: srv.Client(), logs: &testutil.Buffer{}, opts: opts, agents: map[string]int64{}}
}

// newBubbleEnv serves a fake on in-memory connections, for a test in a
// testing/synctest bubble: the adapter's waits (recorded) and the test's
// sleeps pass the time of both, and tick passes before each write the fake
// serves, as time passes between a client's requests. Not before a read:
// the adapter lists under a lock, and a goroutine waiting for a lock is one
// the bubble's clock cannot pass.
func newBubbleEnv(t testing.TB, opts freshdeskfake.Options, tick time.Duration) *env {
	t.Helper()
	opts.APIKey = testKey
	fake := freshdeskfake.New(opts)
	var h http.Handler = fake
	if tick > 0 {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet {
				time.Sleep(tick)
			}
			fake.ServeHTTP(w, r)
		})
	}
	hc := &http.Client{Transport: testutil.PipeServer(t, h)}
	return &env{t: t, fake: fake, url: testutil.PipeURL, hc: hc, bubble: true, logs: &testutil.Buffer{}, opts: opts, agents: map[string]int64{}}
}

func (e *env) config() freshdesk.Config {
	return freshdesk.Config{Common: saas.Common{URL: adapters.ParseURL(e.url)}, APIKey: testKey}
}

// routed is config with a group for each of two departments (made on
// first use), where a department move lands.
func (e *env) routed() freshdesk.Config {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.groups == nil {
		e.groups = freshdesk.Groups{"housekeeping": e.fake.AddGroup("Housekeeping"), "maintenance": e.fake.AddGroup("Maintenance")}
	}
	cfg := e.config()
	cfg.Groups = e.groups
	return cfg
}

// options make the adapter record its waits, and sit them out on the
// bubble's clock (on loopback, not at all).
func (e *env) options() freshdesk.Options {
	return freshdesk.Options{
		HTTP:    e.hc,
		Backoff: httpretry.Backoff{Rand: func() float64 { return 0.5 }},
		Sleep: func(ctx context.Context, d time.Duration) error {
			e.mu.Lock()
			e.sleeps = append(e.sleeps, d)
			e.mu.Unlock()
			if e.bubble {
				return httpretry.Sleep(ctx, d)
			}
			return ctx.Err()
		},
		MaxListPages: e.opts.MaxPages,
	}
}

func (e *env) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("adapter", freshdesk.Name)
}

func (e *env) open(t testing.TB, cfg freshdesk.Config) *freshdesk.Adapter {
	t.Helper()
	a, err := freshdesk.New(cfg, adapters.Deps{Logger: e.logger()}, e.options())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

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
	_, err = a.e.fake.Note(id, a.e.agent(author), body, true)
	return err
}

// MakeTicket makes a ticket as agent Anna does in the agent interface:
// no group (the helpdesk's default), neither of the bridge's fields set.
func (a agent) MakeTicket(_ context.Context, subject, body string) (adapters.Ref, error) {
	id, err := a.e.fake.CreateTicket(a.e.agent("Anna"), subject, body)
	return saas.RefOf(id), err
}

func (a agent) SetStatus(_ context.Context, ref adapters.Ref, author, status string) error {
	id, err := ticketID(ref)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(status)
	if err != nil {
		return err
	}
	return a.e.fake.SetStatus(id, a.e.agent(author), n)
}

func (a agent) Attach(_ context.Context, ref adapters.Ref, author, body string, public bool, files []string) error {
	id, err := ticketID(ref)
	if err != nil {
		return err
	}
	if public {
		_, err = a.e.fake.ReplyWithFiles(id, a.e.agent(author), body, files)
	} else {
		_, err = a.e.fake.NoteWithFiles(id, a.e.agent(author), body, true, files)
	}
	return err
}

// Read shows what an agent sees: the status and each conversation's text
// (body_text), public unless it is a private note.
func (a agent) Read(_ context.Context, ref adapters.Ref) (adaptertest.Snapshot, error) {
	id, err := ticketID(ref)
	if err != nil {
		return adaptertest.Snapshot{}, err
	}
	t, ok := a.e.fake.Ticket(id)
	if !ok {
		return adaptertest.Snapshot{}, adapters.ErrNotFound
	}
	snap := adaptertest.Snapshot{Status: strconv.Itoa(t.Status)}
	for _, c := range t.Conversations {
		snap.Messages = append(snap.Messages, adaptertest.SnapshotMessage{Text: c.BodyText, Public: !c.Private})
	}
	return snap, nil
}

// ReadFields reads the group, the subject (without the "[department] "
// prefix it is written with), due_by and the rating tag.
func (a agent) ReadFields(_ context.Context, ref adapters.Ref) (adaptertest.HeldFields, error) {
	id, err := ticketID(ref)
	if err != nil {
		return adaptertest.HeldFields{}, err
	}
	t, ok := a.e.fake.Ticket(id)
	if !ok {
		return adaptertest.HeldFields{}, adapters.ErrNotFound
	}
	h := adaptertest.HeldFields{Queue: strconv.FormatInt(t.GroupID, 10), Title: t.Subject, Due: t.DueBy,
		Holds: adapters.FieldSet(adapters.FieldDepartment | adapters.FieldTitle | adapters.FieldDue | adapters.FieldRating)}
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

// faults makes the fake fail as Freshdesk does, for the suite's fault
// cases.
type faults struct{ e *env }

func (f faults) RefuseCredentials(testing.TB) {
	f.e.fake.Inject(freshdeskfake.Fault{Status: 401, Times: 1 << 30, Body: `{"code":"invalid_credentials","message":"You have to be logged in to perform this action."}`})
}

func (f faults) Unavailable(testing.TB) {
	f.e.fake.Inject(freshdeskfake.Fault{Status: 503, Times: 1 << 30, Body: `{"message":"unavailable","echo":"` + testKey + `:X"}`})
}

func (f faults) RateLimit(_ testing.TB, n int) {
	f.e.fake.Inject(freshdeskfake.Fault{Status: 429, RetryAfter: "7", Times: n})
}

func (f faults) Restore(testing.TB) { f.e.fake.ClearFaults() }

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts freshdeskfake.Options
		tick time.Duration
		cfg  func(freshdesk.Config) freshdesk.Config
	}{
		{"DocumentedLimits", freshdeskfake.Options{}, 0, nil},
		// One item a page: every list is paged, and a listing's pages are
		// capped at three, as Freshdesk caps them at 300. A second passes
		// with each write, so that tickets differ in updated_at.
		{"SmallPages", freshdeskfake.Options{MaxPerPage: 1, MaxPages: 3}, time.Second, func(c freshdesk.Config) freshdesk.Config {
			c.PageSize = 1
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			adaptertest.RunInBubbles(t, func(t *testing.T) adaptertest.Harness {
				e := newBubbleEnv(t, tc.opts, tc.tick)
				cfg := e.routed()
				if tc.cfg != nil {
					cfg = tc.cfg(cfg)
				}
				t.Cleanup(func() {
					if bytes.Contains([]byte(e.logs.String()), []byte(testKey)) {
						t.Errorf("the API key appears in the adapter's log")
					}
				})
				return adaptertest.Harness{
					New:   func(t testing.TB) adapters.Helpdesk { return e.open(t, cfg) },
					Agent: agent{e},
					// Freshdesk keeps no history of statuses the API can read:
					// polling sees the status a ticket has, so the agent makes
					// one change (TestStatusChanges covers several polls).
					Status:        freshdesk.DefaultStatusMap(),
					AgentStatuses: []string{"4"},
					UnknownRef:    "999999",
					Caps:          adaptertest.Caps{MarkSent: true, AuthorName: true, Events: true},
					// No Archive: Freshdesk cannot find an archived ticket by
					// a custom field, so a fresh instance does not find one
					// without a follow-up (TestArchivedTicket covers the rest).
					Faults:  faults{e},
					Secrets: []string{testKey},
					Logs:    e.logs.String,
					Late: func(t testing.TB, act func()) {
						e.fake.CommitLate(30*time.Second, act)
						time.Sleep(time.Second)
					},
				}
			})
		})
	}
}
