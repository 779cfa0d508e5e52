package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/state"
)

// TestKilledProcessExactlyOnce builds the binary, runs `once` against a
// reference server with the files helpdesk, and kills the process with
// SIGKILL at a seeded pseudo-random API request of each cycle (before or
// after the server carried the request out), with guest and agent activity
// in between. After cycles left in peace, every message must be on each
// side exactly once, and the state file must open.
func TestKilledProcessExactlyOnce(t *testing.T) {
	rounds := 16
	if testing.Short() {
		rounds = 5
	}
	const seed = 20260302
	rng := rand.New(rand.NewPCG(seed, seed))
	t.Logf("seed %d, %d rounds", seed, rounds)

	bin := filepath.Join(t.TempDir(), "ticketbridge")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ts := refservertest.New(t)
	dir := t.TempDir()
	hdDir := filepath.Join(dir, "helpdesk")
	statePath := filepath.Join(dir, "state.db")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"TICKETBRIDGE_API_URL=" + ts.URL, "TICKETBRIDGE_API_KEY=" + ts.Keys.TicketsWrite,
		"TICKETBRIDGE_ADAPTER=files", "TICKETBRIDGE_FILES_DIR=" + hdDir, "TICKETBRIDGE_FILES_SETTLE=0s",
		"TICKETBRIDGE_STATE=" + statePath, "TICKETBRIDGE_LOG_FORMAT=json", "TICKETBRIDGE_LOG_LEVEL=warn",
		"TICKETBRIDGE_CONCURRENCY=2"}

	var ids []string
	for i := range 4 {
		tv, err := ts.Server.CreateTicket(ts.Org, refserver.NewTicket{Department: "housekeeping", TaskDescription: fmt.Sprintf("request %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tv.ID)
		guestWrites(t, ts, tv.ID, "first words of request %d", i)
	}

	// The kill switch: the killAt-th API request of the cycle (or of its
	// POSTs only) kills the process, before or after the server carries it
	// out.
	var (
		mu        gosync.Mutex
		child     *exec.Cmd
		count     int
		killAt    int
		after     bool
		postsOnly bool
		killed    int
		outputs   []string
	)
	ts.Server.SetHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		mu.Lock()
		if !postsOnly || r.Method == http.MethodPost {
			count++
		}
		kill := count == killAt && child != nil
		a := after
		c := child
		mu.Unlock()
		if kill && !a {
			c.Process.Kill()
			mu.Lock()
			killed++
			mu.Unlock()
			panic(http.ErrAbortHandler)
		}
		next.ServeHTTP(w, r)
		if kill {
			c.Process.Kill()
			mu.Lock()
			killed++
			mu.Unlock()
		}
	})
	once := func(arm bool) {
		t.Helper()
		cmd := exec.Command(bin, "once")
		cmd.Env = env
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		mu.Lock()
		count, killAt, after, postsOnly = 0, 0, rng.IntN(2) == 0, rng.IntN(2) == 0
		if arm {
			killAt = 1 + rng.IntN(8)
			if postsOnly {
				killAt = 1 + rng.IntN(2)
			}
		}
		child = cmd
		if err := cmd.Start(); err != nil {
			mu.Unlock()
			t.Fatal(err)
		}
		mu.Unlock()
		err := cmd.Wait()
		mu.Lock()
		child = nil
		mu.Unlock()
		if err != nil && cmd.ProcessState.ExitCode() != -1 { // -1: killed
			t.Fatalf("once: %v\n%s", err, out.String())
		}
		outputs = append(outputs, out.String())
	}

	replies := map[string]bool{}
	for round := range rounds {
		once(true)
		// Activity on both sides before the next cycle.
		id := ids[rng.IntN(len(ids))]
		guestWrites(t, ts, id, "guest line %d", round)
		if f := folderOf(hdDir, ids[rng.IntN(len(ids))]); f != "" {
			kind := []string{"reply", "note"}[rng.IntN(2)]
			body := fmt.Sprintf("agent %s %d", kind, round)
			replies[body] = true
			dropOutbox(t, hdDir, fmt.Sprintf("r%d.txt", round), fmt.Sprintf("ticket: %s\nkind: %s\nauthor: Agent\n\n%s\n", f, kind, body))
		}
	}
	for range 4 {
		once(false)
	}
	mu.Lock()
	if killed == 0 {
		t.Fatal("no process was killed: the test checked nothing")
	}
	t.Logf("%d processes killed", killed)
	mu.Unlock()

	// Exactly once on both sides.
	upstreamBodies := map[string]int{}
	for _, id := range ids {
		v, err := ts.Server.Ticket(id)
		if err != nil {
			t.Fatal(err)
		}
		f := folderOf(hdDir, id)
		if n := countFolders(hdDir, id); n != 1 {
			t.Fatalf("ticket %s has %d helpdesk folders", id, n)
		}
		tj := readTicketJSON(t, filepath.Join(hdDir, "tickets", f, "ticket.json"))
		held := map[string]int{}
		for _, e := range tj.Thread {
			if e.UpstreamID != "" {
				held[e.UpstreamID]++
			}
		}
		for _, m := range v.Messages {
			upstreamBodies[m.Body]++
			want := 1
			if m.External {
				want = 0 // the bridge's own post: never mirrored back
			}
			if held[m.ID] != want {
				t.Errorf("ticket %s: message %q is in the helpdesk %d times, want %d", id, m.Body, held[m.ID], want)
			}
		}
	}
	for body := range replies {
		if upstreamBodies[body] != 1 {
			t.Errorf("agent message %q is upstream %d times, want 1", body, upstreamBodies[body])
		}
	}
	st, err := state.Open(t.Context(), statePath, state.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("the state file does not open after the kills: %v", err)
	}
	st.Close()
	if t.Failed() {
		for i, o := range outputs {
			t.Logf("run %d:\n%s", i, o)
		}
	}
}

func guestWrites(t *testing.T, ts *refservertest.TestServer, id, format string, args ...any) {
	t.Helper()
	if _, err := ts.Server.AddMessage(id, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: fmt.Sprintf(format, args...)}); err != nil {
		t.Fatal(err)
	}
}

func folderOf(hdDir, id string) string {
	des, _ := os.ReadDir(filepath.Join(hdDir, "tickets"))
	for _, de := range des {
		if strings.HasSuffix(de.Name(), id[:8]) {
			return de.Name()
		}
	}
	return ""
}

func countFolders(hdDir, id string) int {
	n := 0
	des, _ := os.ReadDir(filepath.Join(hdDir, "tickets"))
	for _, de := range des {
		if strings.HasSuffix(de.Name(), id[:8]) {
			n++
		}
	}
	return n
}

func dropOutbox(t testing.TB, hdDir, name, content string) {
	t.Helper()
	p := filepath.Join(hdDir, "outbox", name)
	if err := os.WriteFile(p+".tmp", []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		t.Fatal(err)
	}
}

type ticketJSON struct {
	UpstreamID string `json:"upstream_id"`
	Thread     []struct {
		UpstreamID string `json:"upstream_id"`
		EventID    string `json:"event_id"`
		Body       string `json:"body"`
	} `json:"thread"`
}

func readTicketJSON(t *testing.T, path string) ticketJSON {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tj ticketJSON
	if err := json.Unmarshal(b, &tj); err != nil {
		t.Fatal(err)
	}
	return tj
}
