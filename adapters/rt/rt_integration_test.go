package rt_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/adaptertest"
	"github.com/ticketbridge/ticketbridge/adapters/rt"
)

// howToRun is printed when no RT is configured.
const howToRun = "no Request Tracker configured: run `deploy/dev/rt.sh start` (as root on Debian; it installs RT 5 when missing) " +
	"and export its TICKETBRIDGE_RT_* lines, e.g. `set -a; . <(deploy/dev/rt.sh start | grep ^TICKETBRIDGE_RT_); set +a`"

// realRT is the RT the integration tests use, from the variables
// deploy/dev/rt.sh prints.
type realRT struct {
	env       map[string]string
	agentUser string
	agentPass string
	adminUser string
	adminPass string
}

// needRT returns the configured RT, or skips the test; with CI=true a
// missing RT fails it instead.
func needRT(t testing.TB) realRT {
	t.Helper()
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, rt.EnvPrefix) {
			env[k] = v
		}
	}
	r := realRT{
		env:       env,
		agentUser: env["TICKETBRIDGE_RT_TEST_AGENT_USER"], agentPass: env["TICKETBRIDGE_RT_TEST_AGENT_PASSWORD"],
		adminUser: env["TICKETBRIDGE_RT_TEST_ADMIN_USER"], adminPass: env["TICKETBRIDGE_RT_TEST_ADMIN_PASSWORD"],
	}
	if env["TICKETBRIDGE_RT_URL"] == "" || r.agentUser == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but " + howToRun)
		}
		t.Skip(howToRun)
	}
	return r
}

// config returns the adapter's configuration from the environment, with
// the overrides applied.
func (r realRT) config(t testing.TB, override map[string]string) rt.Config {
	t.Helper()
	env := map[string]string{}
	for k, v := range r.env {
		env[k] = v
	}
	for k, v := range override {
		env[k] = v
	}
	cfg, err := rt.LoadConfig(context.Background(), envconfig.MapLookuper(env))
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	return cfg
}

func (r realRT) open(t testing.TB, override map[string]string) *rt.Adapter {
	t.Helper()
	a, err := rt.New(t.Context(), r.config(t, override), adapters.Deps{Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

// queue makes a queue of the test's own in RT as its administrator, so
// that what the test reads in RT is its own: Changes follows the adapter's
// queues only. Without administrator credentials it returns the
// configured default queue.
func (r realRT) queue(t testing.TB, what string) string {
	t.Helper()
	if r.adminUser == "" {
		if q := r.env["TICKETBRIDGE_RT_QUEUE"]; q != "" {
			return q
		}
		return rt.DefaultQueue
	}
	name := fmt.Sprintf("tb-%s-%s", what, strings.ReplaceAll(time.Now().UTC().Format("20060102-150405.000000000"), ".", "-"))
	admin := &agent{base: r.agent().base, user: r.adminUser, pass: r.adminPass, hc: &http.Client{Timeout: time.Minute}}
	if err := admin.do(t.Context(), http.MethodPost, "/queue", nil, map[string]string{"Name": name, "Description": "ticketbridge test " + t.Name()}, nil); err != nil {
		t.Fatalf("make queue %s: %v", name, err)
	}
	return name
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// agent acts in RT as a member of the support team: the second RT user
// deploy/dev/rt.sh creates, through REST2 with basic authentication.
type agent struct {
	base, user, pass string
	hc               *http.Client
	ratingField      string // the rating custom field ReadFields reads; "" for none
	queue            string // where MakeTicket makes a ticket; "" for RT's General
}

func (r realRT) agent() *agent {
	return &agent{
		base: strings.TrimRight(r.env["TICKETBRIDGE_RT_URL"], "/") + "/REST/2.0",
		user: r.agentUser, pass: r.agentPass,
		hc: &http.Client{Timeout: 60 * time.Second},
	}
}

func (g *agent) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	u := g.base + path
	if q != nil {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	req.SetBasicAuth(g.user, g.pass)
	req.Header.Set("Content-Type", "application/json")
	res, err := g.hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("agent %s %s: HTTP %d: %s", method, path, res.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("agent %s %s: %w: %s", method, path, err, b)
		}
	}
	return nil
}

// Reply adds correspondence. RT records it as the agent's user; author is
// not kept (the harness says so with Caps.AuthorName false).
func (g *agent) Reply(ctx context.Context, ref adapters.Ref, _, body string) error {
	return g.do(ctx, http.MethodPost, "/ticket/"+string(ref)+"/correspond", nil,
		map[string]string{"Content": body, "ContentType": "text/plain"}, nil)
}

// MakeTicket makes a ticket as the agent, in the agent's queue, without
// the bridge's custom field: a ticket made by hand (adaptertest.Maker).
func (g *agent) MakeTicket(ctx context.Context, subject, body string) (adapters.Ref, error) {
	var out struct {
		ID json.Number `json:"id"`
	}
	q := g.queue
	if q == "" {
		q = rt.DefaultQueue
	}
	in := map[string]string{"Queue": q, "Subject": subject, "Content": body, "ContentType": "text/plain"}
	if err := g.do(ctx, http.MethodPost, "/ticket", nil, in, &out); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", fmt.Errorf("agent make ticket in %s: RT answered no id", q)
	}
	return adapters.Ref(out.ID.String()), nil
}

// Note adds a comment.
func (g *agent) Note(ctx context.Context, ref adapters.Ref, _, body string) error {
	return g.do(ctx, http.MethodPost, "/ticket/"+string(ref)+"/comment", nil,
		map[string]string{"Content": body, "ContentType": "text/plain"}, nil)
}

// Attach adds correspondence (public) or a comment with files, each a few
// bytes of the type its name says; an empty body is left out, as RT's web
// UI sends files alone.
func (g *agent) Attach(ctx context.Context, ref adapters.Ref, _, body string, public bool, files []string) error {
	in := map[string]any{"ContentType": "text/plain"}
	if body != "" {
		in["Content"] = body
	}
	var atts []map[string]string
	for _, f := range files {
		ctype := mime.TypeByExtension(path.Ext(f))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		atts = append(atts, map[string]string{"FileName": f, "FileType": ctype, "FileContent": base64.StdEncoding.EncodeToString([]byte("not really " + f))})
	}
	in["Attachments"] = atts
	kind := "/comment"
	if public {
		kind = "/correspond"
	}
	return g.do(ctx, http.MethodPost, "/ticket/"+string(ref)+kind, nil, in, nil)
}

// SetStatus sets the status and checks that RT took it (REST2 answers a
// refused change with 200).
func (g *agent) SetStatus(ctx context.Context, ref adapters.Ref, _, status string) error {
	var said []string
	if err := g.do(ctx, http.MethodPut, "/ticket/"+string(ref), nil, map[string]string{"Status": status}, &said); err != nil {
		return err
	}
	var tk struct{ Status string }
	if err := g.do(ctx, http.MethodGet, "/ticket/"+string(ref), nil, nil, &tk); err != nil {
		return err
	}
	if tk.Status != status {
		return fmt.Errorf("agent set status %s: ticket is %s; RT said %q", status, tk.Status, said)
	}
	return nil
}

// Read returns the ticket's status and its correspondence and comments,
// oldest first, as the ticket's history shows them: each transaction's
// text part.
func (g *agent) Read(ctx context.Context, ref adapters.Ref) (adaptertest.Snapshot, error) {
	var snap adaptertest.Snapshot
	var tk struct{ Status string }
	if err := g.do(ctx, http.MethodGet, "/ticket/"+string(ref), nil, nil, &tk); err != nil {
		return snap, err
	}
	snap.Status = tk.Status
	type item struct {
		ID   string `json:"id"`
		Type string `json:"Type"`
		Kind string `json:"type"` // keeps "type" out of Type
	}
	var hist struct{ Items []item }
	q := url.Values{"fields": {"Type"}, "per_page": {"100"}, "orderby": {"id"}}
	if err := g.do(ctx, http.MethodGet, "/ticket/"+string(ref)+"/history", q, nil, &hist); err != nil {
		return snap, err
	}
	for _, h := range hist.Items {
		if h.Type != "Correspond" && h.Type != "Comment" {
			continue
		}
		var atts struct {
			Items []struct {
				ContentType string
				Content     string
			}
		}
		q := url.Values{"fields": {"ContentType,Content"}}
		if err := g.do(ctx, http.MethodGet, "/transaction/"+h.ID+"/attachments", q, nil, &atts); err != nil {
			return snap, err
		}
		text := ""
		for _, a := range atts.Items {
			if strings.HasPrefix(a.ContentType, "text/") && text == "" {
				text = a.Content
			}
		}
		snap.Messages = append(snap.Messages, adaptertest.SnapshotMessage{Text: text, Public: h.Type == "Correspond"})
	}
	return snap, nil
}

// ratingField is the rating custom field of the tests, made (once, for
// all queues) as RT's administrator; "" without administrator
// credentials.
const ratingField = "Guest Rating"

func (r realRT) ratingField(t testing.TB) string {
	t.Helper()
	if r.adminUser == "" {
		return ""
	}
	admin := &agent{base: r.agent().base, user: r.adminUser, pass: r.adminPass, hc: &http.Client{Timeout: time.Minute}}
	var found struct{ Count int }
	q := url.Values{"query": {fmt.Sprintf(`[{"field":"Name","value":%q}]`, ratingField)}}
	if err := admin.do(t.Context(), http.MethodGet, "/customfields", q, nil, &found); err != nil {
		t.Fatalf("find custom field %s: %v", ratingField, err)
	}
	if found.Count == 0 {
		// Queue 0 applies it to every queue (RT::CustomField::Create).
		cf := map[string]any{"Name": ratingField, "Type": "Freeform", "MaxValues": 1, "LookupType": "RT::Queue-RT::Ticket", "Queue": 0,
			"Description": "The guest's rating (set by ticketbridge)"}
		if err := admin.do(t.Context(), http.MethodPost, "/customfield", nil, cf, nil); err != nil {
			t.Fatalf("make custom field %s: %v", ratingField, err)
		}
	}
	return ratingField
}

// ReadFields reads what the RT ticket holds of the platform's fields: its
// queue, Subject, Due and, with a rating field, the rating.
func (g *agent) ReadFields(ctx context.Context, ref adapters.Ref) (adaptertest.HeldFields, error) {
	var tk struct {
		Queue struct {
			ID string `json:"id"`
		}
		Subject, Due string
		CustomFields []struct {
			Name   string   `json:"name"`
			Values []string `json:"values"`
		}
	}
	if err := g.do(ctx, http.MethodGet, "/ticket/"+string(ref), nil, nil, &tk); err != nil {
		return adaptertest.HeldFields{}, err
	}
	var q struct{ Name string }
	if err := g.do(ctx, http.MethodGet, "/queue/"+tk.Queue.ID, nil, nil, &q); err != nil {
		return adaptertest.HeldFields{}, err
	}
	h := adaptertest.HeldFields{Queue: q.Name, Title: tk.Subject,
		Holds: adapters.FieldSet(adapters.FieldDepartment | adapters.FieldTitle | adapters.FieldDue)}
	if due, err := time.Parse(time.RFC3339, tk.Due); err == nil && due.Unix() > 0 {
		h.Due = due.UTC()
	}
	if g.ratingField != "" {
		h.Holds = h.Holds.With(adapters.FieldRating)
		for _, cf := range tk.CustomFields {
			if cf.Name == g.ratingField && len(cf.Values) > 0 {
				v, err := strconv.ParseFloat(cf.Values[0], 64)
				if err != nil {
					return h, fmt.Errorf("rating field holds %q: %w", cf.Values[0], err)
				}
				h.Rating = &v
			}
		}
	}
	return h, nil
}

func TestConformance(t *testing.T) {
	r := needRT(t)
	queue := r.queue(t, "conformance")
	// The case FieldsUpdate moves a ticket between two departments' queues.
	moveTo := r.queue(t, "conformance-maintenance")
	rating := r.ratingField(t)
	g := r.agent()
	g.ratingField = rating
	g.queue = queue
	adaptertest.Run(t, adaptertest.Harness{
		New: func(t testing.TB) adapters.Helpdesk {
			a := r.open(t, map[string]string{"TICKETBRIDGE_RT_QUEUE": queue, "TICKETBRIDGE_RT_QUEUES": "maintenance=" + moveTo,
				"TICKETBRIDGE_RT_RATING_FIELD": rating})
			if err := a.Check(t.Context()); err != nil {
				t.Fatalf("Check: %v", err)
			}
			return a
		},
		Agent:        g,
		Status:       rt.DefaultStatusMap(),
		UnknownRef:   adapters.Ref(strconv.Itoa(999999999)),
		Unsearchable: []string{"deleted"},
		Caps:         adaptertest.Caps{MarkSent: true, Events: true},
	})
}
