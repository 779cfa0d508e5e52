package statuspage

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	gosync "sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// TestOnDemandReadsOncePerCycle: a hotel of many serves its pages from one
// read of its state per cycle, so that views, however many, cost no more
// than one read per cycle; and a request page reads its one ticket by key,
// never searching the state for an id the snapshot does not know.
func TestOnDemandReadsOncePerCycle(t *testing.T) { atT0(t, testOnDemandReadsOncePerCycle) }

func testOnDemandReadsOncePerCycle(t *testing.T) {
	st := fixture(t, 5)
	h := NewHotel("h", st).OnDemand()
	h.CycleReported(sync.Report{Start: t0.Add(-time.Minute), Outcome: sync.OutcomeOK})
	s, err := New(Options{Hotels: only(h), One: true})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9464"+path, nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get("/tickets"); code != 200 || !strings.Contains(body, "hd-4") {
		t.Fatalf("GET /tickets: %d, the table lacks hd-4:\n%s", code, body)
	}

	// A request the state gained since: the page shows it after the next
	// cycle, not before.
	const newID = "99999999-0000-4000-8000-000000000099"
	if err := st.Update(t.Context(), func(tx *state.Tx) error {
		return tx.PutTicket(state.Ticket{ID: newID, Ref: "hd-new", UpstreamStatus: "new", NextDue: t0})
	}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/tickets", "/tickets?q=hd-new"} {
		if code, body := get(path); code != 200 || strings.Contains(body, newID[:8]) {
			t.Fatalf("GET %s read the state again within one cycle (%d):\n%s", path, code, body)
		}
	}
	for _, id := range []string{"hd-new", newID, newID[:8]} {
		if code, _ := get("/tickets/" + id); code != http.StatusNotFound {
			t.Fatalf("GET /tickets/%s: %d, want 404: a request page searched the state", id, code)
		}
	}
	if code, _ := get("/tickets/hd-3"); code != 200 {
		t.Fatalf("GET /tickets/hd-3: %d", code)
	}

	h.CycleReported(sync.Report{Start: t0, Outcome: sync.OutcomeOK})
	if code, body := get("/tickets?q=hd-new"); code != 200 || !strings.Contains(body, newID[:8]) {
		t.Fatalf("after a cycle the table still lacks hd-new (%d):\n%s", code, body)
	}
	for _, id := range []string{"hd-new", newID, newID[:8]} {
		if code, body := get("/tickets/" + id); code != 200 || !strings.Contains(body, newID) {
			t.Fatalf("GET /tickets/%s after a cycle: %d\n%s", id, code, body)
		}
	}
}

// blockingSource is a Source whose Snapshot waits until release is
// closed, counting the views inside it.
type blockingSource struct {
	release chan struct{}

	mu        gosync.Mutex
	in, most  int
	snapshots int
}

func (b *blockingSource) Name() string { return "" }
func (b *blockingSource) Snapshot() Snapshot {
	b.mu.Lock()
	b.in++
	b.snapshots++
	b.most = max(b.most, b.in)
	b.mu.Unlock()
	<-b.release
	b.mu.Lock()
	b.in--
	b.mu.Unlock()
	return Snapshot{Status: sync.Status{Tickets: []sync.TicketStatus{}}}
}
func (b *blockingSource) Ticket(string) (sync.TicketDetail, error)          { return sync.TicketDetail{}, nil }
func (b *blockingSource) Payloads(string) (map[string]state.Payload, error) { return nil, nil }
func (b *blockingSource) ReadNow(string, string) (state.Ticket, error)      { return state.Ticket{}, nil }
func (b *blockingSource) Retry(string, string) (state.Entry, error)         { return state.Entry{}, nil }
func (b *blockingSource) Skip(string, string, string) (state.Entry, error)  { return state.Entry{}, nil }
func (b *blockingSource) Command(sync.Command) (sync.Done, error)           { return sync.Done{}, nil }

// TestViewsAreBounded: views beyond Renders wait, and views beyond Waiting
// more are answered 503 after their Retry-After, without reaching the
// hotel.
func TestViewsAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &blockingSource{release: make(chan struct{})}
		s, err := New(Options{Hotels: only(src), One: true, Renders: 1, Waiting: 1})
		if err != nil {
			t.Fatal(err)
		}
		codes := make(chan int, 2)
		view := func() int {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9464/", nil))
			return rec.Code
		}
		go func() { codes <- view() }() // renders, held in Snapshot
		synctest.Wait()
		go func() { codes <- view() }() // waits for the slot
		synctest.Wait()
		rec := httptest.NewRecorder()
		start := time.Now()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9464/", nil))
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" || time.Since(start) != time.Second {
			t.Fatalf("a third view: %d (Retry-After %q) after %s, want 503 held for 1s", rec.Code, rec.Header().Get("Retry-After"), time.Since(start))
		}
		close(src.release)
		for range 2 {
			if c := <-codes; c != 200 {
				t.Fatalf("a view that waited its turn: %d", c)
			}
		}
		if src.most != 1 || src.snapshots != 2 {
			t.Fatalf("views in the hotel at once: %d (want 1); views that reached it: %d (want 2)", src.most, src.snapshots)
		}
	})
}

// TestViewRateBounded: views beyond the rate, once its burst is spent, are
// answered 429 after their Retry-After, without reaching the hotel, though
// each comes from a client of its own; the rate comes back with time; the
// stylesheet is not counted.
func TestViewRateBounded(t *testing.T) { synctest.Test(t, testViewRateBounded) }

func testViewRateBounded(t *testing.T) {
	src := &blockingSource{release: make(chan struct{})}
	close(src.release)
	s, err := New(Options{Hotels: only(src), One: true, ViewRate: 2})
	if err != nil {
		t.Fatal(err)
	}
	clients := 0
	view := func(path string) *httptest.ResponseRecorder {
		clients++
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9464"+path, nil)
		r.RemoteAddr = fmt.Sprintf("192.0.2.%d:4000", clients)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, r)
		return rec
	}
	for i := range 2 * burstSeconds {
		if rec := view("/"); rec.Code != 200 {
			t.Fatalf("view %d of the burst: %d", i+1, rec.Code)
		}
	}
	if rec := view("/assets/style.css"); rec.Code != 200 {
		t.Fatalf("the stylesheet after the burst: %d", rec.Code)
	}
	start := time.Now()
	rec := view("/")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" || time.Since(start) != holdFor {
		t.Fatalf("a view past the burst: %d, Retry-After %q, after %s; want 429 and 1, held for %s", rec.Code, rec.Header().Get("Retry-After"), time.Since(start), holdFor)
	}
	if src.snapshots != 2*burstSeconds {
		t.Fatalf("views that reached the hotel: %d, want %d", src.snapshots, 2*burstSeconds)
	}
	// The refusal was held a second on the bubble's clock: a second's
	// worth of views has come back, no more.
	for i := range 2 {
		if rec := view("/"); rec.Code != 200 {
			t.Fatalf("view %d a second later: %d", i+1, rec.Code)
		}
	}
	if rec := view("/"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("a third view a second later: %d", rec.Code)
	}
}

// TestSameOriginBehindAProxy: a form posted from the page's external
// address is from this page, though the proxy in front rewrote the Host
// header; any other origin is not.
func TestSameOriginBehindAProxy(t *testing.T) {
	src := &blockingSource{release: make(chan struct{})}
	for _, tc := range []struct {
		extern, origin string
		want           bool
	}{
		{"", "http://127.0.0.1:9464", true},
		{"", "https://bridge.example.com", false},
		{"bridge.example.com", "https://bridge.example.com", true},
		{"bridge.example.com", "https://Bridge.Example.com", true},
		{"bridge.example.com", "https://evil.example", false},
		{"bridge.example.com", "null", false},
		{"", "", true}, // no Origin: the CSRF token decides
	} {
		s, err := New(Options{Hotels: only(src), One: true, ExternalHost: tc.extern})
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:9464/retry", nil)
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if got := s.sameOrigin(r); got != tc.want {
			t.Errorf("external host %q, Origin %q: same origin %v, want %v", tc.extern, tc.origin, got, tc.want)
		}
	}
}

// TestBudgetTableIsBounded: the clients a budget keeps are bounded; a
// full table forgets the ones whose share filled again, or else the one
// that took longest ago.
func TestBudgetTableIsBounded(t *testing.T) {
	g := newBudget(2 * maxClients) // every client takes one
	now := t0
	for i := range maxClients + 10 {
		g.take(fmt.Sprintf("client-%d", i), now)
		now = now.Add(time.Nanosecond) // none fills again meanwhile
	}
	if n := len(g.clients); n > maxClients {
		t.Fatalf("%d clients kept, want at most %d", n, maxClients)
	}
	if _, ok := g.clients["client-0"]; ok {
		t.Error("the client that took longest ago is kept in a full table")
	}
	if _, ok := g.clients[fmt.Sprintf("client-%d", maxClients+9)]; !ok {
		t.Error("the newest client is not kept")
	}
	// Clients whose share has filled again make room before any other.
	now = now.Add(burstSeconds * time.Second)
	g.take("late", now)
	if n := len(g.clients); n != 1 {
		t.Errorf("%d clients kept after every share filled again and one took, want 1", n)
	}
}
