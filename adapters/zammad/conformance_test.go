package zammad_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/ticketbridge/ticketbridge/adapters/zammad"
	"github.com/ticketbridge/ticketbridge/adapters/zammad/zammadfake"
	"github.com/ticketbridge/ticketbridge/internal/httpretry"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

const (
	testToken    = "zm-token-5c1d8e0f7a9b42d6b3e1"
	testCustomer = "guest-requests@hotel.example"
	testField    = "guest_request_id"
	testDue      = "guest_due_at"
)

// dueAttribute is the Date & Time attribute the tests' systems hold the
// due date in.
var dueAttribute = zammadfake.Attribute{Name: testDue, Display: "Due", DataType: "datetime"}

// env is a fake Zammad and what a test needs to open adapters on it.
type env struct {
	t      testing.TB
	fake   *zammadfake.Server
	url    string
	hc     *http.Client
	bubble bool
	logs   *testutil.Buffer

	mu     sync.Mutex
	agents map[string]int64
}

// newEnv serves a fake on loopback, for a test in which no time need
// pass: the adapter's waits between attempts return at once. The fake has
// the ticket attribute and the groups the tests use; opts may change
// anything else.
func newEnv(t testing.TB, opts zammadfake.Options) *env {
	t.Helper()
	fake := newFake(opts)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return &env{t: t, fake: fake, url: srv.URL, hc: srv.Client(), logs: &testutil.Buffer{}, agents: map[string]int64{}}
}

// newBubbleEnv serves a fake as newEnv does but on in-memory connections,
// for a test in a testing/synctest bubble: the adapter's waits and the
// test's sleeps pass the time of both.
func newBubbleEnv(t testing.TB, opts zammadfake.Options) *env {
	t.Helper()
	fake := newFake(opts)
	hc := &http.Client{Transport: testutil.PipeServer(t, fake)}
	return &env{t: t, fake: fake, url: testutil.PipeURL, hc: hc, bubble: true, logs: &testutil.Buffer{}, agents: map[string]int64{}}
}

func newFake(opts zammadfake.Options) *zammadfake.Server {
	opts.Token = testToken
	if opts.Attributes == nil {
		opts.Attributes = []zammadfake.Attribute{{Name: testField, Display: "Guest request"}, dueAttribute}
	}
	if opts.Groups == nil {
		opts.Groups = []string{"Users", "Housekeeping", "Technical Service"}
	}
	return zammadfake.New(opts)
}

func (e *env) config() zammad.Config {
	return zammad.Config{Common: saas.Common{URL: adapters.ParseURL(e.url)}, Token: testToken, Customer: testCustomer, DueAttribute: testDue,
		Groups: zammad.Groups{"housekeeping": "Housekeeping", "maintenance": "Technical Service"}}
}

// options make the adapter wait on the bubble's clock, or not at all on
// loopback.
func (e *env) options() zammad.Options {
	o := zammad.Options{HTTP: e.hc, Backoff: httpretry.Backoff{Rand: func() float64 { return 0.5 }}}
	if !e.bubble {
		o.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	}
	return o
}

func (e *env) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("adapter", zammad.Name)
}

func (e *env) open(t testing.TB, cfg zammad.Config, opts zammad.Options) *zammad.Adapter {
	t.Helper()
	a, err := zammad.New(cfg, adapters.Deps{Logger: e.logger()}, opts)
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

// agent plays the support team on the fake through its agent methods,
// writing in the editor's HTML as Zammad's web app does.
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
	return a.e.fake.SetState(id, a.e.agent(author), status)
}

func (a agent) Attach(_ context.Context, ref adapters.Ref, author, body string, public bool, files []string) error {
	id, err := ticketID(ref)
	if err != nil {
		return err
	}
	_, err = a.e.fake.Update(id, a.e.agent(author), zammadfake.AgentUpdate{Body: body, Internal: !public, HTML: true, Attachments: files})
	return err
}

// MakeTicket makes a ticket as the agent Anna through the API, with her
// own token, as Zammad's web app does: in the default group, for a
// guest who called, its first article a public note by her; the
// attribute stays empty.
func (a agent) MakeTicket(ctx context.Context, subject, body string) (adapters.Ref, error) {
	return a.makeIn(ctx, "Users", subject, body)
}

// makeIn is MakeTicket in group.
func (a agent) makeIn(ctx context.Context, group, subject, body string) (adapters.Ref, error) {
	tok, err := a.e.fake.Token(a.e.agent("Anna"))
	if err != nil {
		return "", err
	}
	in, err := json.Marshal(map[string]any{"title": subject, "group": group, "customer_id": "guess:caller@guest.example",
		"article": map[string]any{"body": body, "type": "note", "internal": false}})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.e.url+"/api/v1/tickets", bytes.NewReader(in))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Token token="+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.e.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		ID int64 `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusCreated || out.ID == 0 {
		return "", fmt.Errorf("agent make ticket: HTTP %d, id %d, %v", resp.StatusCode, out.ID, err)
	}
	return adapters.Ref(strconv.FormatInt(out.ID, 10)), nil
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
	snap := adaptertest.Snapshot{Status: t.State}
	for i, art := range t.Articles {
		if i == 0 {
			continue // the request itself
		}
		snap.Messages = append(snap.Messages, adaptertest.SnapshotMessage{Text: art.Body, Public: !art.Internal})
	}
	return snap, nil
}

// ReadFields reads the group, the title (without the "[department] "
// prefix it is written with), the due date attribute and the rating tag.
func (a agent) ReadFields(_ context.Context, ref adapters.Ref) (adaptertest.HeldFields, error) {
	id, err := ticketID(ref)
	if err != nil {
		return adaptertest.HeldFields{}, err
	}
	t, ok := a.e.fake.Ticket(id)
	if !ok {
		return adaptertest.HeldFields{}, adapters.ErrNotFound
	}
	h := adaptertest.HeldFields{Queue: t.Group, Title: t.Title,
		Holds: adapters.FieldSet(adapters.FieldDepartment | adapters.FieldTitle | adapters.FieldDue | adapters.FieldRating)}
	if _, rest, ok := strings.Cut(t.Title, "] "); ok && strings.HasPrefix(t.Title, "[") {
		h.Title = rest
	}
	if v := t.Attributes[testDue]; v != "" {
		if h.Due, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return h, fmt.Errorf("due attribute %q: %w", v, err)
		}
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

// faults makes the fake fail as Zammad does, for the suite's fault cases.
// Zammad's answers carry no credential; the fake's injected faults have a
// body of their own.
type faults struct{ e *env }

func (f faults) RefuseCredentials(testing.TB) {
	f.e.fake.Inject(zammadfake.Fault{Status: 401, Times: 1 << 30})
}

func (f faults) Unavailable(testing.TB) {
	f.e.fake.Inject(zammadfake.Fault{Status: 503, Times: 1 << 30})
}

func (f faults) RateLimit(_ testing.TB, n int) {
	f.e.fake.Inject(zammadfake.Fault{Status: 429, RetryAfter: 7 * time.Second, Times: n})
}

func (f faults) Restore(testing.TB) { f.e.fake.ClearFaults() }

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts zammadfake.Options
		page int
		max  int
	}{
		{"ZammadLimits", zammadfake.Options{}, 0, 0},
		// One ticket per search page and two events per Changes call:
		// paging and the event cap carry every case.
		{"SmallPages", zammadfake.Options{MaxPerPage: 1}, 1, 2},
		// The full-text index lags by an hour; nothing the adapter
		// does waits for it.
		{"LaggingIndex", zammadfake.Options{SearchLag: time.Hour}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// In bubbles: a late commit is followed by a second passing.
			adaptertest.RunInBubbles(t, func(t *testing.T) adaptertest.Harness {
				e := newBubbleEnv(t, tc.opts)
				cfg := e.config()
				cfg.PageSize = tc.page
				opts := e.options()
				opts.MaxEvents = tc.max
				t.Cleanup(func() {
					if strings.Contains(e.logs.String(), testToken) {
						t.Errorf("the token appears in the adapter's log")
					}
				})
				return adaptertest.Harness{
					Late: func(t testing.TB, act func()) {
						e.fake.CommitLate(30*time.Second, act)
						time.Sleep(time.Second)
					},
					New:        func(t testing.TB) adapters.Helpdesk { return e.open(t, cfg, opts) },
					Agent:      agent{e},
					Status:     zammad.DefaultStatusMap(),
					UnknownRef: "999999",
					Caps:       adaptertest.Caps{MarkSent: true, AuthorName: true, Events: true},
					Faults:     faults{e},
					Secrets:    []string{testToken},
					Logs:       e.logs.String,
				}
			})
		})
	}
}
