// Package saasfake is the plumbing the fakes of the SaaS helpdesks
// (zendeskfake, freshdeskfake, zammadfake) share, so that none writes it
// again: the clock a test moves back with CommitLate, the faults a test
// injects and the log of the requests a fake received ([Base], embedded
// in each fake's Server), an injected answer ([Fault]), JSON answers, the
// Retry-After of a rate limit, the link to another page, what a fake
// tells of an attached file, and the snapshots a test reads of a fake's
// records, one or all in order.
//
// What each API does its own way stays in its fake: routes, errors,
// paging, rate limits and their headers, authentication. Like the fakes,
// it is for tests only; no binary links it.
package saasfake

import (
	"cmp"
	"encoding/json"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Base is embedded in a fake's Server: F is the fake's Fault type, R its
// Request type. It is safe for concurrent use and needs no set-up.
type Base[F, R any] struct {
	lag atomic.Int64 // CommitLate's, in nanoseconds

	mu       sync.Mutex
	faults   []*pending[F]
	requests []R
}

type pending[F any] struct {
	fault        F
	method, path string
	left         int
}

// Now is the time a fake stamps on what happens: the runtime's in UTC (a
// test that needs it to pass runs in a testing/synctest bubble), less the
// lag of [Base.CommitLate].
func (b *Base[F, R]) Now() time.Time {
	return time.Now().UTC().Add(-time.Duration(b.lag.Load()))
}

// CommitLate runs act as writes the helpdesk commits late: what act does
// carries a time d in the past, before a poll that has already read past
// it (a test's clock cannot go back).
func (b *Base[F, R]) CommitLate(d time.Duration, act func()) {
	b.lag.Store(int64(d))
	defer b.lag.Store(0)
	act()
}

// Record adds r to the request log.
func (b *Base[F, R]) Record(r R) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests = append(b.requests, r)
}

// Requests returns the requests received so far, oldest first.
func (b *Base[F, R]) Requests() []R {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.requests)
}

// ResetRequests forgets the request log.
func (b *Base[F, R]) ResetRequests() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests = nil
}

// AddFault adds fault f, which answers times requests (0 or less: one)
// whose method is method ("" or any case) and whose path starts with
// path; faults hit matching requests in the order they were added.
func (b *Base[F, R]) AddFault(f F, method, path string, times int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.faults = append(b.faults, &pending[F]{fault: f, method: method, path: path, left: max(times, 1)})
}

// ClearFaults removes the faults not yet spent.
func (b *Base[F, R]) ClearFaults() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.faults = nil
}

// TakeFault returns the first fault matching a request of method on
// path, and spends one of its hits.
func (b *Base[F, R]) TakeFault(method, path string) (F, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, p := range b.faults {
		if (p.method == "" || strings.EqualFold(p.method, method)) && strings.HasPrefix(path, p.path) {
			p.left--
			if p.left <= 0 {
				b.faults = slices.Delete(b.faults, i, i+1)
			}
			return p.fault, true
		}
	}
	var none F
	return none, false
}

// Fault is an answer injected instead of a fake's own.
type Fault struct {
	Method string // "" matches every method
	Path   string // a path prefix such as "/api/v2/tickets"; "" matches every path
	Status int
	// RetryAfter is sent as the Retry-After header when not "".
	RetryAfter string
	// Header holds further headers, e.g. the rate-limit ones.
	Header http.Header
	// Body is the answer's body; "" means the fake's own error body.
	Body string
	// Times is how many matching requests get the fault; 0 means one.
	Times int
	// AfterApply makes the fake do the request's work first and then
	// answer with the fault: the client sees a failure although the
	// change was made, as when an answer is lost.
	AfterApply bool
}

// Write answers with f, with body when f has none.
func (f Fault) Write(w http.ResponseWriter, body string) {
	for k, vs := range f.Header {
		w.Header()[k] = slices.Clone(vs)
	}
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(f.Status)
	_, _ = w.Write([]byte(cmp.Or(f.Body, body)))
}

// WriteJSON answers status with v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// RetryAfter is the Retry-After of a wait: whole seconds, rounded up, at
// least one.
func RetryAfter(wait time.Duration) string {
	return strconv.FormatInt(max(int64((wait+time.Second-1)/time.Second), 1), 10)
}

// Link is the absolute address of r with its query parameter key set to
// value, as a next or previous page link gives it.
func Link(r *http.Request, key, value string) string {
	q := r.URL.Query()
	q.Set(key, value)
	u := url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawQuery: q.Encode()}
	if r.TLS != nil {
		u.Scheme = "https"
	}
	return u.String()
}

// File is what a fake tells of a file called name that an agent attached:
// the content type its extension names (application/octet-stream when
// none), and a size made up from the name. Fakes keep no content.
func File(name string) (contentType string, size int64) {
	return cmp.Or(mime.TypeByExtension(path.Ext(name)), "application/octet-stream"), int64(1024 + 17*len(name))
}

// Lookup returns snap of the value of m at k, and whether there is one.
func Lookup[K comparable, V, S any](m map[K]*V, k K, snap func(*V) S) (S, bool) {
	if v := m[k]; v != nil {
		return snap(v), true
	}
	var none S
	return none, false
}

// Sorted returns snap of each value of m, in the order of their keys.
func Sorted[K cmp.Ordered, V, S any](m map[K]V, snap func(V) S) []S {
	out := make([]S, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, snap(m[k]))
	}
	return out
}
