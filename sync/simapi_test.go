package sync_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	gosync "sync"
	"syscall"
)

// The API side of the simulator: the reference server, called in process
// by a RoundTripper (no sockets, no timers), which decides each request's
// fate from its identity. Faults are the client's and the network's, so
// the server's own fault injection stays off.
var simAPIFaults = []simKind{
	{"reset", 0.03},         // the connection closed before the request arrived
	{"error", 0.05},         // 500 before the work
	{"timeout", 0.02},       // no answer in time, the request never arrived
	{"rate_limit", 0.04},    // 429 with a short Retry-After: the client waits it out
	{"put_off", 0.005},      // 429 with a Retry-After longer than a cycle may wait
	{"lost", 0.04},          // carried out, then the connection closed
	{"error_after", 0.03},   // carried out, then a 502 from a proxy in between
	{"timeout_after", 0.02}, // carried out, then no answer in time
}

// simStaleRate is the share of list reads answered with the answer the
// same list got last time: a list that does not yet show a write, as a
// read replica or a cache in front of the API gives.
const simStaleRate = 0.15

// simAPI is the http.RoundTripper of the simulated API.
type simAPI struct {
	s   *sim
	srv http.Handler

	mu    gosync.Mutex
	lists map[string]simAnswer // the last answer of each list read
}

type simAnswer struct {
	status int
	header http.Header
	body   []byte
}

func (a simAnswer) response(req *http.Request) *http.Response {
	return &http.Response{
		Status: fmt.Sprintf("%d %s", a.status, http.StatusText(a.status)), StatusCode: a.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: a.header.Clone(), Body: io.NopCloser(bytes.NewReader(a.body)),
		ContentLength: int64(len(a.body)), Request: req,
	}
}

func jsonAnswer(status int, body string, extra ...string) simAnswer {
	h := http.Header{"Content-Type": {"application/json"}}
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return simAnswer{status: status, header: h, body: []byte(body + "\n")}
}

// errSimCrashed is what every call of an engine that crashed gets: the
// process is gone, nothing it asks for happens.
var errSimCrashed = errors.New("the simulated process crashed")

// errSimReset is a connection closed without an answer.
var errSimReset = &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}

func (a *simAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	identity := "api " + req.Method + " " + req.URL.RequestURI()
	if k := req.Header.Get("Idempotency-Key"); k != "" {
		identity += " key=" + k
	}
	d, crash, dead := a.s.enter(identity)
	if dead {
		a.s.tr.log("%s: dead", d.id)
		return nil, errSimCrashed
	}
	isList := req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/tickets")
	kind := ""
	switch {
	case crash != "":
		kind = "crash_" + crash
	case a.s.faulty():
		kind = d.pick(simAPIFaults)
		if kind == "" && isList && d.chance(simStaleRate) {
			kind = "stale"
		}
	}
	fail := func(err error) (*http.Response, error) {
		a.s.tr.log("%s: %s", d.id, kind)
		return nil, err
	}
	answer := func(an simAnswer) (*http.Response, error) {
		a.s.tr.log("%s: %s -> %d", d.id, kind, an.status)
		return an.response(req), nil
	}
	switch kind {
	case "crash_before":
		return fail(errSimCrashed)
	case "reset":
		return fail(errSimReset)
	case "timeout":
		return fail(injectedTimeout{})
	case "error":
		return answer(jsonAnswer(500, `{"error":"internal_error","message":"simulated"}`))
	case "rate_limit", "put_off":
		wait := 1 + d.rnd.IntN(20)
		if kind == "put_off" {
			wait = 60 + d.rnd.IntN(120)
		}
		return answer(jsonAnswer(429, `{"error":"rate_limited","message":"simulated"}`, "Retry-After", strconv.Itoa(wait)))
	case "stale":
		a.mu.Lock()
		last, ok := a.lists[req.URL.RequestURI()]
		a.mu.Unlock()
		if ok {
			return answer(last)
		}
		kind = "stale_none"
	}

	an := a.serve(req, body)
	if isList && an.status == http.StatusOK {
		a.mu.Lock()
		a.lists[req.URL.RequestURI()] = an
		a.mu.Unlock()
	}
	if fs := a.s.act.fields; fs != nil && req.Method == http.MethodGet && an.status == http.StatusOK && isSingleRead(req.URL.Path) {
		fs.read(an.body)
	}
	switch kind {
	case "crash_after":
		return fail(errSimCrashed)
	case "lost":
		return fail(errSimReset)
	case "timeout_after":
		return fail(injectedTimeout{})
	case "error_after":
		return answer(jsonAnswer(502, `{"error":"bad_gateway","message":"simulated"}`))
	}
	return answer(an)
}

// isSingleRead reports whether path is a single read of a request
// (GET .../tickets/{id}).
func isSingleRead(path string) bool {
	i := strings.LastIndex(path, "/tickets/")
	if i < 0 {
		return false
	}
	rest := path[i+len("/tickets/"):]
	return rest != "" && !strings.Contains(rest, "/")
}

// serve has the reference server answer the request.
func (a *simAPI) serve(req *http.Request, body []byte) simAnswer {
	sreq := httptest.NewRequestWithContext(req.Context(), req.Method, req.URL.String(), bytes.NewReader(body))
	sreq.Header = req.Header.Clone()
	sreq.RemoteAddr = "192.0.2.10:40000"
	rec := httptest.NewRecorder()
	a.srv.ServeHTTP(rec, sreq)
	return simAnswer{status: rec.Code, header: rec.Header().Clone(), body: rec.Body.Bytes()}
}
