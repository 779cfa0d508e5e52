package refserver

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Stats are the server's counters.
type Stats struct {
	// Requests counts answers per route ("GET /ops-public-api/v1/tickets/{id}")
	// and HTTP status; status 0 counts connections closed without an answer.
	Requests map[string]map[int]int `json:"requests"`
	// Faults counts injected faults per kind: latency, drop, error,
	// rate_limit, lost_answer, slow_body.
	Faults map[string]int `json:"faults"`
}

// RequestRecord is one request as the server saw it. It holds no
// credential.
type RequestRecord struct {
	At             time.Time
	Method         string
	Path           string
	Route          string
	Status         int // 0: the connection was closed without an answer
	IdempotencyKey string
}

// requestLogSize is how many requests [Server.Requests] remembers.
const requestLogSize = 1000

type statsState struct {
	mu       sync.Mutex
	requests map[string]map[int]int
	faults   map[string]int
	log      []RequestRecord
}

func (st *statsState) init() {
	st.requests = map[string]map[int]int{}
	st.faults = map[string]int{}
}

func (st *statsState) count(route string, status int, r *http.Request, at time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	m := st.requests[route]
	if m == nil {
		m = map[int]int{}
		st.requests[route] = m
	}
	m[status]++
	if len(st.log) == requestLogSize {
		st.log = slices.Delete(st.log, 0, requestLogSize/10)
	}
	path := r.URL.Path
	if len(path) > 200 {
		path = path[:200]
	}
	idem := r.Header.Get("Idempotency-Key")
	if len(idem) > maxIdemKey {
		idem = idem[:maxIdemKey]
	}
	st.log = append(st.log, RequestRecord{At: at, Method: r.Method, Path: path, Route: route, Status: status, IdempotencyKey: idem})
}

func (st *statsState) fault(kind string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.faults[kind]++
}

// Stats returns a copy of the counters.
func (s *Server) Stats() Stats {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	out := Stats{Requests: map[string]map[int]int{}, Faults: maps.Clone(s.stats.faults)}
	for k, v := range s.stats.requests {
		out.Requests[k] = maps.Clone(v)
	}
	return out
}

// Requests returns the last requests (up to 1000), oldest first: method,
// path, route, status and Idempotency-Key, never a credential.
func (s *Server) Requests() []RequestRecord {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	return slices.Clone(s.stats.log)
}

// routeOf names the route of r for the counters, with identifiers replaced
// by placeholders so that the number of routes stays small.
func routeOf(r *http.Request) string {
	method := r.Method
	switch method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions:
	default:
		method = "OTHER"
	}
	p := r.URL.Path
	switch {
	case p == TokenPath || p == VerifyPath:
		return method + " " + p
	case strings.HasPrefix(p, BasePath+"/tickets"):
		return method + " " + BasePath + templ(strings.TrimPrefix(p, BasePath), "tickets")
	case strings.HasPrefix(p, APIPrefix):
		return method + " " + APIPrefix + "{other}"
	case strings.HasPrefix(p, ConsolePath+"/"):
		return method + " " + ConsolePath + templ(strings.TrimPrefix(p, ConsolePath), "tickets", "keys")
	}
	return method + " {unknown}"
}

// templ replaces the segment after each collection name by {id}.
func templ(p string, collections ...string) string {
	segs := strings.Split(p, "/")
	if len(segs) > 5 {
		return "/{unknown}"
	}
	for i := 1; i < len(segs); i++ {
		if slices.Contains(collections, segs[i-1]) && segs[i] != "" {
			segs[i] = "{id}"
		}
	}
	for i := range segs {
		if segs[i] != "{id}" && !slices.Contains([]string{"", "tickets", "keys", "messages", "status", "rating", "fields", "stats", "organizations", "faults"}, segs[i]) {
			segs[i] = "{unknown}"
		}
	}
	return strings.Join(segs, "/")
}

// limiter is a sliding-window rate limiter per key.
type limiter struct {
	mu   sync.Mutex
	cfg  RateLimit
	hits map[string][]time.Time
}

func newLimiter(cfg RateLimit) *limiter {
	return &limiter{cfg: cfg, hits: map[string][]time.Time{}}
}

// allow counts a request of key at now when the window has room, and
// otherwise says how long until it has.
func (l *limiter) allow(key string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	from := now.Add(-l.cfg.Window)
	if len(l.hits) > 10000 {
		for k, hs := range l.hits {
			if !hs[len(hs)-1].After(from) {
				delete(l.hits, k)
			}
		}
	}
	hs := l.hits[key]
	i := 0
	for i < len(hs) && !hs[i].After(from) {
		i++
	}
	hs = hs[i:]
	if len(hs) >= l.cfg.Requests {
		l.hits[key] = hs
		return false, hs[0].Sub(from)
	}
	l.hits[key] = append(hs, now)
	return true, 0
}
