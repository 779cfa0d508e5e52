package notify

import (
	"context"
	"net/http"
	neturl "net/url"
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

	mu      sync.Mutex
	last    time.Time
	lastOK  bool
	pending chan bool
	sent    atomic.Uint64
	failed  atomic.Uint64
	lastErr atomic.Pointer[string]
}

// Ping is a heartbeat's URLs, parsed once where the settings are read
// ([ParsePing]): the one called after a cycle that succeeded, and the
// one called after a failed one (nil: none).
type Ping struct {
	ok, fail *httpTarget
}

// PingOptions are how [ParsePing] makes a ping's targets.
type PingOptions struct {
	// HTTP sends the pings; nil means a client of its own.
	HTTP *Poster
	// AllowInsecureHTTP accepts plain http to a host that is not loopback.
	AllowInsecureHTTP bool
}

// ParsePing checks and parses a ping URL and its failure URL: "" means
// url with "/fail" added to its path (healthchecks.io's form), "off"
// none. Errors name the setting's kind, never the URL.
func ParsePing(url, failURL string, o PingOptions) (*Ping, error) {
	if o.HTTP == nil {
		o.HTTP = &Poster{}
	}
	u, err := pingURL("ping", url, o)
	if err != nil {
		return nil, err
	}
	p := &Ping{ok: o.target("ping", u)}
	switch failURL {
	case "off":
	case "":
		f := *u
		f.Path = strings.TrimRight(u.Path, "/") + "/fail"
		f.RawPath = ""
		p.fail = o.target("ping-fail", &f)
	default:
		f, err := pingURL("ping-fail", failURL, o)
		if err != nil {
			return nil, err
		}
		p.fail = o.target("ping-fail", f)
	}
	return p, nil
}

// NewHeartbeat returns the heartbeat of p, pinging an outcome at most
// every interval (0 means [DefaultPingInterval]); it pings nothing until
// [Heartbeat.Run].
func NewHeartbeat(p *Ping, interval time.Duration) *Heartbeat {
	if interval <= 0 {
		interval = DefaultPingInterval
	}
	return &Heartbeat{ok: p.ok, fail: p.fail, interval: interval, pending: make(chan bool, 1)}
}

func pingURL(kind, raw string, o PingOptions) (*neturl.URL, error) {
	u, err := neturl.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return nil, errorf("%s URL: want an http(s) URL with a host and no user information", kind)
	}
	if err := checkHTTPS(kind, u, o.AllowInsecureHTTP); err != nil {
		return nil, err
	}
	u.Fragment = ""
	return u, nil
}

func (o PingOptions) target(kind string, u *neturl.URL) *httpTarget {
	return &httpTarget{kind: kind, host: u.Host, url: u.String(), secrets: secretsOf(u.String(), ""), poster: o.HTTP}
}

// Beat reports a cycle's outcome. It never waits: the ping is sent by Run,
// and a beat within the interval of a ping of the same outcome is
// dropped, as is one that finds the last still unsent.
func (h *Heartbeat) Beat(ok bool) {
	h.mu.Lock()
	now := time.Now()
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
			_ = h.Ping(ctx, ok)
		}
	}
}

// Ping sends the ping of an outcome now, and counts it; ok false sends
// the failure URL, if any. A run of one cycle (ticketbridge once) calls
// it; a daemon calls [Heartbeat.Beat].
func (h *Heartbeat) Ping(ctx context.Context, ok bool) error {
	t := h.ok
	if !ok {
		t = h.fail
	}
	if t == nil {
		return nil
	}
	if err := t.post(ctx, http.MethodGet, nil, http.Header{}, nil); err != nil {
		if ctx.Err() != nil {
			return err
		}
		h.failed.Add(1)
		s := err.Error()
		h.lastErr.Store(&s)
		return err
	}
	h.sent.Add(1)
	return nil
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
