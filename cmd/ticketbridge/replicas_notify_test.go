package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// noticeCounter is an ntfy topic the replicas notify: it counts the
// notices by title. When hold is set, it keeps its answer to the next
// notice until the sender's connection closes (the sender killed), so
// that the kill falls between sending the notice and recording it sent.
type noticeCounter struct {
	url    string
	got    chan string // each notice's title, as it arrives
	hold   atomic.Bool
	mu     gosync.Mutex
	titles []string
}

func newNoticeCounter(t *testing.T) *noticeCounter {
	t.Helper()
	c := &noticeCounter{got: make(chan string, 64)}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/ops" {
			http.NotFound(rw, r)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		title := r.Header.Get("Title")
		c.mu.Lock()
		c.titles = append(c.titles, title)
		c.mu.Unlock()
		hold := c.hold.Swap(false)
		select {
		case c.got <- title:
		default: // dozens unread: the test failed already; never block
		}
		if hold {
			<-r.Context().Done() // the sender is gone
		}
	}))
	t.Cleanup(srv.Close)
	c.url = srv.URL
	return c
}

// count returns how many notices arrived whose title starts with prefix.
func (c *noticeCounter) count(prefix string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.titles {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

// await returns the title of the next notice; patience only reports a
// hang.
func (c *noticeCounter) await(t *testing.T, what string) string {
	t.Helper()
	select {
	case s := <-c.got:
		return s
	case <-time.After(patience): // a hang's report, not a timing
		t.Fatalf("no %s within %s", what, patience)
		return ""
	}
}

// storedEpisode is what the test reads of an episode's row in the
// database (state's noticeRecord).
type storedEpisode struct {
	Fired    bool   `json:"fired"`
	Count    int    `json:"count"`
	Resolved bool   `json:"resolved"`
	Pending  string `json:"pending"`
}

// TestReplicasNotifyOnce: two replicas of the daemon on PostgreSQL share
// a hotel whose API key the reference server refuses (revoked), and
// notify one ntfy topic. The replica holding the hotel is killed with
// SIGKILL while the condition holds, the other takes the hotel over, and
// the key is put back. Twice:
//
//  1. killed after the firing notice was sent and recorded sent (its
//     episode's row has no pending notice): the topic gets the firing
//     notice once, no repeat while the new holder's cycles fail (the
//     repeat interval is an hour), and "back to normal" once;
//  2. killed between sending and recording (the topic holds its answer
//     until the sender is gone, and the row still has the notice
//     pending): the topic got the notice once; the new holder would send
//     it again only after the claim timeout (ten minutes), so the
//     resolution, which replaces the pending notice, comes first and the
//     firing notice is counted once; twice is allowed, and only in this
//     episode, for a machine slow enough to pass the claim timeout.
func TestReplicasNotifyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two replicas")
	}
	nc := newNoticeCounter(t)
	w := newReplicaWorld(t, 1, 2, 20261202, false)
	w.env = []string{"TICKETBRIDGE_NOTIFY_URLS=ntfy+" + nc.url + "/ops", "TICKETBRIDGE_NOTIFY_GROUP_WINDOW=0s",
		"TICKETBRIDGE_NOTIFY_REPEAT=1h", "TICKETBRIDGE_NOTIFY_CYCLES_FAILING_AFTER=1h"}
	hotel, org := w.hotels[0], w.orgs[w.hotels[0]]
	key, err := os.ReadFile(filepath.Join(w.dir, hotel+".key"))
	if err != nil {
		t.Fatal(err)
	}
	restore := refserver.SeedKey{Name: "bridge", Value: strings.TrimSpace(string(key)), Platform: refserver.PlatformRead, Tickets: refserver.TicketsWrite}
	conn, err := pgx.Connect(t.Context(), w.db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(t.Context()) })

	var mu gosync.Mutex
	ids := map[string]int{} // replica id -> index, from its start line
	w.observe = func(l replicaLine) {
		if l.Msg == "ticketbridge started" {
			mu.Lock()
			ids[l.Replica] = l.replica
			mu.Unlock()
		}
	}
	// holder is the replica whose live lease of the hotel the database
	// holds.
	holder := func() int {
		t.Helper()
		var id string
		err := conn.QueryRow(t.Context(), `SELECT replica FROM ticketbridge_leases WHERE hotel = $1 AND expires_at > now()`, hotel).Scan(&id)
		if err != nil {
			t.Fatalf("the lease of %s: %v", hotel, err)
		}
		mu.Lock()
		defer mu.Unlock()
		i, ok := ids[id]
		if !ok {
			t.Fatalf("the lease of %s names replica %s, which no start line named", hotel, id)
		}
		return i
	}
	// episode reads the key-refused episode's row; ok is false when none
	// is stored.
	episode := func() (ep storedEpisode, ok bool) {
		t.Helper()
		var raw []byte
		err := conn.QueryRow(t.Context(), `SELECT value FROM ticketbridge_state WHERE hotel = $1 AND bucket = 'notices' AND key = $2`,
			hotel, []byte("api-key-refused/")).Scan(&raw)
		if errors.Is(err, pgx.ErrNoRows) {
			return ep, false
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &ep); err != nil {
			t.Fatalf("the episode's row %s: %v", raw, err)
		}
		return ep, true
	}
	// taken waits for a replica other than not to log taking the hotel
	// after after.
	taken := func(not int, after time.Time) int {
		t.Helper()
		return w.waitFor("a takeover of the hotel", func(l replicaLine) bool {
			return l.replica != not && l.Hotel == hotel && strings.HasPrefix(l.Msg, "hotel taken") && l.Time.After(after)
		}).replica
	}
	failing := func(i, n int) {
		t.Helper()
		seen := 0
		w.waitFor("failing cycles of the new holder", func(l replicaLine) bool {
			if l.replica == i && l.Hotel == hotel && l.Report != nil && l.Report.Outcome == tbsync.OutcomeFailed {
				seen++
			}
			return seen == n
		})
	}
	const (
		firing   = "API key refused for hotel hotel-00"
		repeated = "Still: "
		resolved = "Back to normal: hotel hotel-00"
	)

	w.start(0)
	w.start(1)
	taken(-1, time.Time{})
	w.settle(1)

	// 1. Killed after recording.
	began := time.Now()
	if err := w.ts.Server.RevokeKey(org, "bridge"); err != nil {
		t.Fatal(err)
	}
	if s := nc.await(t, "firing notice"); !strings.HasPrefix(s, firing) {
		t.Fatalf("the first notice is %q, want %q", s, firing)
	}
	// Recorded sent: the episode's row loses its pending notice, seen
	// after one of the lines the replicas write each cycle.
	w.waitFor("the firing notice recorded sent", func(l replicaLine) bool {
		if n := nc.count(firing); n > 1 {
			t.Fatalf("episode 1: the firing notice arrived %d times before any kill", n)
		}
		if l.Report == nil {
			return false
		}
		ep, ok := episode()
		return ok && ep.Fired && ep.Pending == ""
	})
	killed, at := holder(), time.Now()
	w.kill(killed)
	t.Logf("episode 1: replica %d killed after it recorded the firing notice sent", killed)
	next := taken(killed, at)
	if h := holder(); h != next {
		t.Fatalf("the database names replica %d the holder, the log %d", h, next)
	}
	failing(next, 3)
	w.start(killed) // a standby, for episode 2
	if err := w.ts.Server.AddKey(org, restore); err != nil {
		t.Fatal(err)
	}
	if s := nc.await(t, "resolution"); !strings.HasPrefix(s, resolved) {
		t.Fatalf("after the firing notice came %q, want %q", s, resolved)
	}
	// Each notice of an episode goes through one queue of its sender, in
	// the order decided: a repeat decided before the resolution arrived
	// before it.
	if f, r, b := nc.count(firing), nc.count(repeated), nc.count(resolved); f != 1 || r != 0 || b != 1 {
		t.Fatalf("episode 1: %d firing, %d repeated, %d resolution notices; want 1, 0, 1 (%q)", f, r, b, nc.titles)
	}
	t.Logf("episode 1: one firing and one resolution notice over %s, with a takeover between", time.Since(began).Round(time.Millisecond))

	// 2. Killed between sending and recording.
	w.settle(1)
	began = time.Now()
	nc.hold.Store(true)
	if err := w.ts.Server.RevokeKey(org, "bridge"); err != nil {
		t.Fatal(err)
	}
	if s := nc.await(t, "firing notice"); !strings.HasPrefix(s, firing) {
		t.Fatalf("the first notice of episode 2 is %q, want %q", s, firing)
	}
	killed, at = holder(), time.Now()
	w.kill(killed)
	if ep, ok := episode(); !ok || ep.Pending != "fired" {
		t.Fatalf("after a kill with the answer held, the episode is %+v (stored %v), want the firing notice pending", ep, ok)
	}
	t.Logf("episode 2: replica %d killed between sending the firing notice and recording it sent", killed)
	next = taken(killed, at)
	if h := holder(); h != next {
		t.Fatalf("the database names replica %d the holder, the log %d", h, next)
	}
	failing(next, 3)
	if err := w.ts.Server.AddKey(org, restore); err != nil {
		t.Fatal(err)
	}
	// A resend after the claim timeout may come before the resolution.
	for {
		s := nc.await(t, "resolution of episode 2")
		if strings.HasPrefix(s, resolved) {
			break
		}
		if !strings.HasPrefix(s, firing) {
			t.Fatalf("episode 2: unexpected notice %q", s)
		}
	}
	f, r, b := nc.count(firing)-1, nc.count(repeated), nc.count(resolved)-1
	if f < 1 || f > 2 || r != 0 || b != 1 {
		t.Fatalf("episode 2: %d firing, %d repeated, %d resolution notices; want 1 (or 2, the kill's one repeat), 0, 1 (%q)", f, r, b, nc.titles)
	}
	t.Logf("episode 2: %d firing and one resolution notice over %s, with a takeover between", f, time.Since(began).Round(time.Millisecond))
	w.stopAll()
}
