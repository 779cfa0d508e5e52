package saasfake_test

import (
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/saas/saasfake"
)

func TestFaultsHitInOrderAndAreSpent(t *testing.T) {
	var b saasfake.Base[string, int]
	b.AddFault("any", "", "", 0)
	b.AddFault("put tickets", "PUT", "/api/tickets", 2)
	for i, want := range []struct {
		method, path, fault string
		ok                  bool
	}{
		{"PUT", "/api/tickets/1", "any", true}, // the first added, once
		{"put", "/api/tickets/1", "put tickets", true},
		{"GET", "/api/tickets/1", "", false},
		{"PUT", "/api/users/1", "", false},
		{"PUT", "/api/tickets", "put tickets", true},
		{"PUT", "/api/tickets", "", false},
	} {
		if f, ok := b.TakeFault(want.method, want.path); f != want.fault || ok != want.ok {
			t.Errorf("request %d, %s %s: fault %q, %v; want %q, %v", i, want.method, want.path, f, ok, want.fault, want.ok)
		}
	}
	b.AddFault("cleared", "", "", 5)
	b.ClearFaults()
	if f, ok := b.TakeFault("GET", "/"); ok {
		t.Errorf("a cleared fault hit: %q", f)
	}
}

func TestRequestLog(t *testing.T) {
	var b saasfake.Base[string, int]
	b.Record(1)
	b.Record(2)
	got := b.Requests()
	if !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("requests %v", got)
	}
	got[0] = 9
	if b.Requests()[0] != 1 {
		t.Error("the log shares its slice with a caller")
	}
	b.ResetRequests()
	if len(b.Requests()) != 0 {
		t.Errorf("after a reset: %v", b.Requests())
	}
}

func TestCommitLateMovesTheClockBackWhileItRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b saasfake.Base[string, int]
		var during time.Time
		b.CommitLate(time.Hour, func() { during = b.Now() })
		if want := time.Now().UTC().Add(-time.Hour); !during.Equal(want) {
			t.Errorf("a late commit is stamped %s, want %s", during, want)
		}
		if now := b.Now(); !now.Equal(time.Now().UTC()) {
			t.Errorf("after CommitLate the clock says %s", now)
		}
	})
}

func TestFaultWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	saasfake.Fault{Status: 429, RetryAfter: "3", Header: map[string][]string{"X-Ratelimit-Remaining": {"0"}}}.Write(rec, `{"error":"default"}`)
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "3" || rec.Header().Get("X-RateLimit-Remaining") != "0" ||
		rec.Body.String() != `{"error":"default"}` || rec.Header().Get("Content-Type") != "application/json; charset=utf-8" {
		t.Errorf("answer %d %v %q", rec.Code, rec.Header(), rec.Body)
	}
	rec = httptest.NewRecorder()
	saasfake.Fault{Status: 500, Body: "own"}.Write(rec, "default")
	if rec.Body.String() != "own" || rec.Header().Get("Retry-After") != "" {
		t.Errorf("a fault's own body: %v %q", rec.Header(), rec.Body)
	}
}

func TestRetryAfterRoundsUpToWholeSeconds(t *testing.T) {
	for wait, want := range map[time.Duration]string{
		0: "1", -time.Second: "1", time.Millisecond: "1", time.Second: "1",
		1500 * time.Millisecond: "2", time.Minute: "60",
	} {
		if got := saasfake.RetryAfter(wait); got != want {
			t.Errorf("RetryAfter(%s) = %s, want %s", wait, got, want)
		}
	}
}

func TestLink(t *testing.T) {
	r := httptest.NewRequest("GET", "http://fake.example/api/v2/tickets?page=1&per_page=2", nil)
	if got, want := saasfake.Link(r, "page", "2"), "http://fake.example/api/v2/tickets?page=2&per_page=2"; got != want {
		t.Errorf("Link = %s, want %s", got, want)
	}
	r = httptest.NewRequest("GET", "https://fake.example/x", nil)
	if got, want := saasfake.Link(r, "page[after]", "abc"), "https://fake.example/x?page%5Bafter%5D=abc"; got != want {
		t.Errorf("Link over TLS = %s, want %s", got, want)
	}
}

func TestFile(t *testing.T) {
	if ctype, size := saasfake.File("photo.png"); ctype != "image/png" || size != 1024+17*9 {
		t.Errorf("photo.png: %s, %d", ctype, size)
	}
	if ctype, _ := saasfake.File("notes"); ctype != "application/octet-stream" {
		t.Errorf("a name without extension: %s", ctype)
	}
}

func TestSortedAndLookup(t *testing.T) {
	m := map[int64]*int{3: new(int), 1: new(int), 2: new(int)}
	for k, v := range m {
		*v = int(k) * 10
	}
	snap := func(v *int) string { return strconv.Itoa(*v) }
	if got := saasfake.Sorted(m, snap); !slices.Equal(got, []string{"10", "20", "30"}) {
		t.Errorf("Sorted = %v", got)
	}
	if got, ok := saasfake.Lookup(m, 2, snap); got != "20" || !ok {
		t.Errorf("Lookup(2) = %q, %v", got, ok)
	}
	if got, ok := saasfake.Lookup(m, 4, snap); got != "" || ok {
		t.Errorf("Lookup(4) = %q, %v", got, ok)
	}
}
