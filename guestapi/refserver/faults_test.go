package refserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
)

// sleeps records the waits the server asks for and returns at once.
type sleeps struct {
	mu sync.Mutex
	ds []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ds = append(s.ds, d)
	return ctx.Err()
}

func (s *sleeps) get() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.ds...)
}

func withSleep(s *sleeps) refservertest.Option {
	return func(o *refserver.Options) { o.Sleep = s.sleep }
}

// raw sends a request on a fresh connection and returns the answer or the
// transport error.
func raw(t *testing.T, f *fixture, method, path, key, body string) (*http.Response, []byte, error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(t.Context(), method, f.ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Authorization", "Bearer "+key)
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(hr)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestFaultsAtRateOne(t *testing.T) {
	sl := &sleeps{}
	f := newFixture(t, withSleep(sl))
	srv := f.ts.Server
	list := "/ops-public-api/v1/tickets"
	key := f.ts.Keys.TicketsWrite

	set := func(fl refserver.Faults) {
		t.Helper()
		if err := srv.SetFaults(fl); err != nil {
			t.Fatal(err)
		}
	}

	set(refserver.Faults{ErrorRate: 1})
	resp, b, err := raw(t, f, "GET", list, key, "")
	if err != nil || resp.StatusCode != 500 || !strings.Contains(string(b), `"error":"internal_error"`) {
		t.Errorf("error fault: %v %v %s", err, resp, b)
	}
	// Never on the console.
	if a := console(t, f, "GET", "/stats", ""); a.status != 200 {
		t.Errorf("console under faults: %d", a.status)
	}

	set(refserver.Faults{RateLimitRate: 1, RetryAfter: 7 * time.Second})
	resp, b, err = raw(t, f, "POST", "/api-auth/token", "", `{"api_key":"`+f.ts.Keys.PlatformRead+`"}`)
	if err != nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" || !strings.Contains(string(b), "rate_limited") {
		t.Errorf("429 fault on the token endpoint: %v %v %s", err, resp, b)
	}

	set(refserver.Faults{DropRate: 1})
	if resp, _, err := raw(t, f, "GET", list, key, ""); err == nil {
		t.Errorf("drop fault: got an answer %d", resp.StatusCode)
	}

	set(refserver.Faults{LostAnswerRate: 1})
	if resp, _, err := raw(t, f, "POST", "/ops-public-api/v1/tickets/"+f.ticket+"/messages", key, `{"body":"lost"}`); err == nil {
		t.Errorf("lost answer fault: got an answer %d", resp.StatusCode)
	}
	if v, _ := srv.Ticket(f.ticket); v.Messages[len(v.Messages)-1].Body != "lost" {
		t.Errorf("lost answer fault: the request was not carried out")
	}

	set(refserver.Faults{SlowBodyRate: 1, SlowBodyDelay: 30 * time.Millisecond})
	before := len(sl.get())
	resp, b, err = raw(t, f, "GET", list, key, "")
	var l guestapi.TicketList
	if err != nil || resp.StatusCode != 200 || json.Unmarshal(b, &l) != nil || len(l.Tickets) != 1 {
		t.Errorf("slow body: %v %v %s", err, resp, b)
	}
	if waits := sl.get()[before:]; len(waits) != 7 || waits[0] != 30*time.Millisecond {
		t.Errorf("slow body waits %v, want 7 of 30ms", waits)
	}

	set(refserver.Faults{LatencyRate: 1, Latency: 2 * time.Second})
	before = len(sl.get())
	if resp, _, err := raw(t, f, "GET", list, key, ""); err != nil || resp.StatusCode != 200 {
		t.Errorf("latency: %v %v", err, resp)
	}
	if waits := sl.get()[before:]; len(waits) != 1 || waits[0] != 2*time.Second {
		t.Errorf("latency waits %v, want one of 2s", waits)
	}

	set(refserver.Faults{})
	if resp, _, err := raw(t, f, "GET", list, key, ""); err != nil || resp.StatusCode != 200 {
		t.Errorf("no faults: %v %v", err, resp)
	}
	st := srv.Stats()
	for _, k := range []string{"error", "rate_limit", "drop", "lost_answer", "slow_body", "latency"} {
		if st.Faults[k] != 1 {
			t.Errorf("fault counter %s = %d, want 1 (%v)", k, st.Faults[k], st.Faults)
		}
	}
	if st.Requests["GET /ops-public-api/v1/tickets"][0] != 1 {
		t.Errorf("the dropped request is not counted as 0: %v", st.Requests)
	}
}

func TestFaultsAreSeeded(t *testing.T) {
	run := func() string {
		f := newFixture(t, func(o *refserver.Options) {
			o.Faults = refserver.Faults{Seed: 42, ErrorRate: 0.3, RateLimitRate: 0.3}
		})
		var b strings.Builder
		for range 30 {
			b.WriteString(http.StatusText(do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets", key: f.ts.Keys.TicketsRead}).status)[:1])
		}
		return b.String()
	}
	a, b := run(), run()
	if a != b {
		t.Errorf("same seed, different faults: %s vs %s", a, b)
	}
	if !strings.Contains(a, "O") || !strings.Contains(a, "I") || !strings.Contains(a, "T") {
		t.Errorf("at 0.3/0.3 want a mix of 200, 500 and 429: %s", a)
	}
}

func TestFaultValidation(t *testing.T) {
	srv := refserver.New(refserver.Options{})
	for _, fl := range []refserver.Faults{{ErrorRate: 1.1}, {DropRate: -0.1}, {ErrorRate: 0.6, DropRate: 0.6}, {Latency: -time.Second}} {
		if err := srv.SetFaults(fl); err == nil {
			t.Errorf("%+v accepted", fl)
		}
	}
}

func TestHooks(t *testing.T) {
	f := newFixture(t)
	f.ts.Server.SetHook(refserver.AddField("x_future", "surprise"))
	a := do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets", key: f.ts.Keys.TicketsRead})
	if a.status != 200 || strings.Count(string(a.body), `"x_future":"surprise"`) != 2 {
		t.Errorf("added field: %s", a.body)
	}
	var l guestapi.TicketList
	if err := json.Unmarshal(a.body, &l); err != nil || len(l.Tickets) != 1 {
		t.Errorf("with an unknown field the list still decodes: %v", err)
	}
	f.ts.Server.SetHook(refserver.Match("POST", "/api-auth/", refserver.AnswerHTML(502, "<html>Bad gateway</html>")))
	resp, b, err := raw(t, f, "POST", "/api-auth/token", "", `{}`)
	if err != nil || resp.StatusCode != 502 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || string(b) != "<html>Bad gateway</html>" {
		t.Errorf("HTML answer: %v %v %s", err, resp, b)
	}
	if a := do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets", key: f.ts.Keys.TicketsRead}); a.status != 200 {
		t.Errorf("Match let another path through to the hook: %d", a.status)
	}
	f.ts.Server.SetHook(nil)
	if a := do(t, f.ts, req{method: "POST", path: "/api-auth/token", body: `{"api_key":"` + f.ts.Keys.PlatformRead + `"}`}); a.status != 200 {
		t.Errorf("hook removed: %d", a.status)
	}
}
