package refserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Faults describe what goes wrong on the public API and the token
// endpoints, never on the console. Each request draws once from a seeded
// random source: with probability DropRate its connection is closed
// without an answer, with ErrorRate it gets 500 internal_error, with
// RateLimitRate 429 rate_limited, with LostAnswerRate it is carried out and
// then its connection closed (the caller cannot know it succeeded), with
// SlowBodyRate its answer is written in pieces with pauses. These five are
// exclusive, so their rates add up to at most 1. Independently, with
// LatencyRate the request waits Latency first. The zero value injects
// nothing.
type Faults struct {
	// Seed seeds the random source; the same seed and the same requests
	// give the same faults.
	Seed uint64

	Latency     time.Duration
	LatencyRate float64

	ErrorRate float64

	RateLimitRate float64
	// RetryAfter is the Retry-After of an injected 429; zero means 1 s.
	RetryAfter time.Duration

	DropRate       float64
	LostAnswerRate float64

	SlowBodyRate float64
	// SlowBodyDelay is the pause between pieces of a slow answer; zero
	// means 50 ms. Pauses go through Options.Sleep.
	SlowBodyDelay time.Duration

	// Hook, when set, receives every public and token request and decides
	// what happens: it may answer itself, or call next (the server with the
	// faults above) with the request, an altered request, or a writer that
	// alters the answer. See [AddField], [AnswerHTML] and [Match].
	Hook Hook
}

// Hook intercepts a request to the public API or the token endpoints.
type Hook func(w http.ResponseWriter, r *http.Request, next http.Handler)

func (f Faults) validate() error {
	rates := []struct {
		name string
		v    float64
	}{{"LatencyRate", f.LatencyRate}, {"ErrorRate", f.ErrorRate}, {"RateLimitRate", f.RateLimitRate},
		{"DropRate", f.DropRate}, {"LostAnswerRate", f.LostAnswerRate}, {"SlowBodyRate", f.SlowBodyRate}}
	for _, r := range rates {
		if math.IsNaN(r.v) || r.v < 0 || r.v > 1 {
			return fmt.Errorf("faults: %s is %v; want a number from 0 to 1", r.name, r.v)
		}
	}
	if sum := f.ErrorRate + f.RateLimitRate + f.DropRate + f.LostAnswerRate + f.SlowBodyRate; sum > 1+1e-9 {
		return fmt.Errorf("faults: ErrorRate, RateLimitRate, DropRate, LostAnswerRate and SlowBodyRate add up to %v; want at most 1", sum)
	}
	if f.Latency < 0 || f.RetryAfter < 0 || f.SlowBodyDelay < 0 {
		return fmt.Errorf("faults: Latency, RetryAfter and SlowBodyDelay must not be negative")
	}
	return nil
}

type faultKind string

const (
	faultNone       faultKind = ""
	faultDrop       faultKind = "drop"
	faultError      faultKind = "error"
	faultRateLimit  faultKind = "rate_limit"
	faultLostAnswer faultKind = "lost_answer"
	faultSlowBody   faultKind = "slow_body"
)

type faultPlan struct {
	kind       faultKind
	latency    time.Duration
	retryAfter time.Duration
	slowDelay  time.Duration
}

type faultState struct {
	mu  sync.Mutex
	f   Faults
	rng *rand.Rand
}

func (fs *faultState) set(f Faults) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.f = f
	fs.rng = rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))
}

func (fs *faultState) hook() Hook {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.f.Hook
}

func (fs *faultState) roll() faultPlan {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.f
	var p faultPlan
	if f.LatencyRate > 0 && fs.rng.Float64() < f.LatencyRate {
		p.latency = f.Latency
	}
	if f.ErrorRate+f.RateLimitRate+f.DropRate+f.LostAnswerRate+f.SlowBodyRate == 0 {
		return p
	}
	u := fs.rng.Float64()
	for _, k := range []struct {
		kind faultKind
		rate float64
	}{{faultDrop, f.DropRate}, {faultError, f.ErrorRate}, {faultRateLimit, f.RateLimitRate},
		{faultLostAnswer, f.LostAnswerRate}, {faultSlowBody, f.SlowBodyRate}} {
		if u < k.rate {
			p.kind = k.kind
			break
		}
		u -= k.rate
	}
	p.retryAfter = f.RetryAfter
	if p.retryAfter == 0 {
		p.retryAfter = time.Second
	}
	p.slowDelay = f.SlowBodyDelay
	if p.slowDelay == 0 {
		p.slowDelay = 50 * time.Millisecond
	}
	return p
}

// SetFaults replaces the faults, and reseeds the random source, while the
// server runs.
func (s *Server) SetFaults(f Faults) error {
	if err := f.validate(); err != nil {
		return fmt.Errorf("set faults: %w", err)
	}
	s.faults.set(f)
	return nil
}

// Faults returns the faults in effect.
func (s *Server) Faults() Faults {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	return s.faults.f
}

// SetHook replaces only the hook of the faults; nil removes it.
func (s *Server) SetHook(h Hook) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.f.Hook = h
}

// abort closes the connection without an answer.
func abort(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		_ = conn.Close()
		return
	}
	panic(http.ErrAbortHandler)
}

// writeSlowly writes resp in up to eight pieces with a pause after each.
func (s *Server) writeSlowly(w http.ResponseWriter, r *http.Request, resp response, delay time.Duration) {
	resp.writeHeader(w)
	rc := http.NewResponseController(w)
	body := resp.body
	piece := max(1, (len(body)+7)/8)
	for len(body) > 0 {
		n := min(piece, len(body))
		if _, err := w.Write(body[:n]); err != nil {
			return
		}
		_ = rc.Flush()
		body = body[n:]
		if len(body) > 0 {
			if err := s.opts.Sleep(r.Context(), delay); err != nil {
				return
			}
		}
	}
}

// Match applies h to requests with the method (empty: any) whose path
// starts with pathPrefix; other requests go straight to next.
func Match(method, pathPrefix string, h Hook) Hook {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if (method == "" || r.Method == method) && strings.HasPrefix(r.URL.Path, pathPrefix) {
			h(w, r, next)
			return
		}
		next.ServeHTTP(w, r)
	}
}

// AnswerHTML answers with an HTML page and the given status, as a proxy or
// a maintenance page in front of the API would.
func AnswerHTML(status int, page string) Hook {
	return func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		w.WriteHeader(status)
		_, _ = w.Write([]byte(page))
	}
}

// AddField adds a field to every JSON object answer (and to every object
// in its arrays at the top level of the object, e.g. each list item), as a
// later version of the API may; clients must tolerate it.
func AddField(name string, value any) Hook {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		buf := &bufferWriter{header: http.Header{}}
		next.ServeHTTP(buf, r)
		body := buf.body.Bytes()
		var obj map[string]json.RawMessage
		if json.Unmarshal(body, &obj) == nil && obj != nil {
			v, err := json.Marshal(value)
			if err == nil {
				for k, raw := range obj {
					var items []map[string]json.RawMessage
					if json.Unmarshal(raw, &items) == nil {
						for _, it := range items {
							if it != nil {
								it[name] = v
							}
						}
						if b, err := json.Marshal(items); err == nil {
							obj[k] = b
						}
					}
				}
				obj[name] = v
				if b, err := json.Marshal(obj); err == nil {
					body = append(b, '\n')
				}
			}
		}
		for k, vs := range buf.header {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if buf.status == 0 {
			buf.status = http.StatusOK
		}
		w.WriteHeader(buf.status)
		_, _ = w.Write(body)
	}
}

// bufferWriter collects an answer so that a hook can change it.
type bufferWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferWriter) Header() http.Header { return b.header }
func (b *bufferWriter) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}
func (b *bufferWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}
