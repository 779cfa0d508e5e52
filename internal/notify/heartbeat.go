package notify

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultPingInterval is the least time between two pings of the same
// outcome.
const DefaultPingInterval = time.Minute

// Heartbeat calls (GET) a ping URL (healthchecks.io, Uptime Kuma's push
// monitor, a dead man's switch) after each cycle: the URL after a cycle
// that succeeded, the failure URL after one that failed. A monitor that
// stops hearing from the bridge raises its alarm, even when the machine
// is down. A daemon makes one per hotel, or one for the process.
type Heartbeat struct {
	ok, fail *httpTarget // fail nil: failures are not pinged
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	last    time.Time
	lastOK  bool
	pending chan bool
	sent    atomic.Uint64
	failed  atomic.Uint64
	lastErr atomic.Pointer[string]
}

// HeartbeatOptions configure a [Heartbeat].
type HeartbeatOptions struct {
	// URL is called after a cycle that succeeded.
	URL string
	// FailURL is called after a cycle that failed; "" means URL with
	// "/fail" added to its path (healthchecks.io's form), "off" none.
	FailURL string
	// Interval is the least time between two pings of the same outcome;
	// a change of outcome pings at once. 0 means [DefaultPingInterval].
	Interval time.Duration
	// HTTP sends the pings; nil means a client of its own.
	HTTP *Poster
	// AllowInsecureHTTP accepts plain http to a host that is not loopback.
	AllowInsecureHTTP bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// NewHeartbeat checks o and returns its heartbeat; it pings nothing
// until [Heartbeat.Run]. Errors name the host only.
func NewHeartbeat(o HeartbeatOptions) (*Heartbeat, error) {
	if o.HTTP == nil {
		o.HTTP = &Poster{}
	}
	h := &Heartbeat{interval: o.Interval, now: o.Now, pending: make(chan bool, 1)}
	if h.interval <= 0 {
		h.interval = DefaultPingInterval
	}
	if h.now == nil {
		h.now = time.Now
	}
	var err error
	if h.ok, err = pingTarget("ping", o.URL, o); err != nil {
		return nil, err
	}
	switch o.FailURL {
	case "off":
	case "":
		u, _ := url.Parse(h.ok.url)
		u.Path = strings.TrimRight(u.Path, "/") + "/fail"
		u.RawPath = ""
		h.fail, _ = pingTarget("ping-fail", u.String(), o)
	default:
		if h.fail, err = pingTarget("ping-fail", o.FailURL, o); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func pingTarget(kind, raw string, o HeartbeatOptions) (*httpTarget, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return nil, errorf("%s URL: want an http(s) URL with a host and no user information", kind)
	}
	if err := checkHTTPS(kind, u, o.AllowInsecureHTTP); err != nil {
		return nil, err
	}
	u.Fragment = ""
	return &httpTarget{kind: kind, host: u.Host, url: u.String(), secrets: secretsOf(u.String(), ""), poster: o.HTTP}, nil
}

// Beat reports a cycle's outcome. It never waits: the ping is sent by Run,
// and a beat within the interval of a ping of the same outcome is
// dropped, as is one that finds the last still unsent.
func (h *Heartbeat) Beat(ok bool) {
	h.mu.Lock()
	now := h.now()
	if !h.last.IsZero() && ok == h.lastOK && now.Sub(h.last) < h.interval {
		h.mu.Unlock()
		return
	}
	h.last, h.lastOK = now, ok
	h.mu.Unlock()
	select {
	case h.pending <- ok:
	default:
		select { // the newer outcome replaces the one not yet sent
		case <-h.pending:
		default:
		}
		select {
		case h.pending <- ok:
		default:
		}
	}
}

// Run sends the pings until ctx ends.
func (h *Heartbeat) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ok := <-h.pending:
			t := h.ok
			if !ok {
				t = h.fail
			}
			if t == nil {
				continue
			}
			if err := t.post(ctx, http.MethodGet, nil, http.Header{}, nil); err != nil {
				if ctx.Err() != nil {
					return
				}
				h.failed.Add(1)
				s := err.Error()
				h.lastErr.Store(&s)
				continue
			}
			h.sent.Add(1)
		}
	}
}

// PingCounters are a heartbeat's numbers.
type PingCounters struct {
	Sent, Failed uint64
	LastError    string
}

// Counters returns the heartbeat's numbers now.
func (h *Heartbeat) Counters() PingCounters {
	c := PingCounters{Sent: h.sent.Load(), Failed: h.failed.Load()}
	if s := h.lastErr.Load(); s != nil {
		c.LastError = *s
	}
	return c
}

// String names the ping's host only.
func (h *Heartbeat) String() string { return "heartbeat " + hostOnly(h.ok.host) }
