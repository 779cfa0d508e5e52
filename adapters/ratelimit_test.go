package adapters_test

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

// TestBudgets: a 429 for one endpoint, with the account's budget left,
// holds back that endpoint only, until Retry-After has passed; a 429 with
// the account's budget spent holds back every request. In a bubble, the
// wait passes on its clock, and the helpdesk is served on in-memory
// connections.
func TestBudgets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var remaining atomic.Int64
		remaining.Store(5)
		var refuse atomic.Value
		refuse.Store("")
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Total", "10")
			w.Header().Set("X-Left", strconv.FormatInt(remaining.Load(), 10))
			if r.URL.Path == refuse.Load().(string) {
				w.Header().Set("Retry-After", "30")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			w.WriteHeader(http.StatusOK)
		})
		now := time.Now()
		b := &adapters.Budgets{
			Endpoint:    func(r *http.Request) string { return strings.TrimPrefix(r.URL.Path, "/") },
			TotalHeader: "X-Total", RemainingHeader: "X-Left",
		}
		hc := &http.Client{Transport: b.Transport(testutil.PipeServer(t, h))}
		get := func(path string) int {
			t.Helper()
			resp, err := hc.Get(testutil.PipeURL + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}

		refuse.Store("/list")
		if got := get("/list"); got != http.StatusTooManyRequests {
			t.Fatalf("list: %d", got)
		}
		refuse.Store("")
		if got := get("/list"); got != http.StatusTooManyRequests {
			t.Errorf("list during its wait: %d, want held back", got)
		}
		if got := get("/notes"); got != http.StatusOK {
			t.Errorf("notes while only the list waits: %d, want sent", got)
		}
		if a := b.Account(); !a.Known || a.Total != 10 || a.Remaining != 5 || !a.BlockedUntil.IsZero() {
			t.Errorf("Account() = %+v", a)
		}
		if e := b.Endpoints()["list"]; !e.BlockedUntil.Equal(now.Add(30 * time.Second)) {
			t.Errorf("Endpoints()[list] = %+v", e)
		}
		time.Sleep(31 * time.Second)
		if got := get("/list"); got != http.StatusOK {
			t.Errorf("list after its wait: %d", got)
		}

		remaining.Store(0)
		refuse.Store("/list")
		get("/list")
		refuse.Store("")
		if got := get("/notes"); got != http.StatusTooManyRequests {
			t.Errorf("notes with the account's budget spent: %d, want held back", got)
		}
	})
}
