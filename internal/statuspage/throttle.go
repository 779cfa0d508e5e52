package statuspage

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	gosync "sync"
	"time"
)

// Guessing the console token is counted per client: of the wrong tokens
// a client sends within failWindow, from the sign-in form or as a bearer
// credential alike, loginFails are answered as wrong (and logged), and
// the others 429, as too many, until the oldest of those failures is
// failWindow old. Other clients are not affected.
//
// The right token is never refused, nor is a live session: on loopback
// every local user is the same client, and one of them guessing must not
// keep the operators out. So the count cannot keep a guesser from
// learning which guess is right: what keeps the token out of reach is its
// length (MinTokenLen, 2^128 guesses and more); a wrong guess also takes
// from its client's share of the sign-in budget (limit.go), and the count
// bounds the answers and log lines that guessing costs.
const (
	loginFails = 5 // wrong tokens a client may send within failWindow
	failWindow = time.Minute
	// maxClients bounds the table of clients with recent failures; when
	// it is full the one whose last failure is oldest is forgotten.
	maxClients = 4096
	// ipv6Prefix groups IPv6 clients: one host commonly holds a /64.
	ipv6Prefix = 64
)

// throttle counts the failed token guesses of each client address.
type throttle struct {
	trusted []netip.Prefix // proxies whose X-Forwarded-For is believed

	mu    gosync.Mutex
	fails map[string][]time.Time // client → its failures within failWindow, oldest first
}

func newThrottle(trusted []netip.Prefix) *throttle {
	return &throttle{trusted: trusted, fails: map[string][]time.Time{}}
}

// wrong records a wrong token from client, in the same step as it checks
// that client has failures left, and reports whether it had: false means
// the guess is one too many and is answered so, not as wrong. Guesses sent
// at once are counted one by one: no more than loginFails of them within
// failWindow are answered as wrong.
func (t *throttle) wrong(client string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.recent(client)
	if len(f) >= loginFails {
		return false
	}
	if f == nil && len(t.fails) >= maxClients {
		t.evict()
	}
	t.fails[client] = append(f, time.Now())
	return true
}

// recent drops client's failures older than failWindow and returns the
// rest; nil when none is left. t.mu is held.
func (t *throttle) recent(client string) []time.Time {
	f, ok := t.fails[client]
	if !ok {
		return nil
	}
	now := time.Now()
	f = slices.DeleteFunc(f, func(at time.Time) bool { return now.Sub(at) >= failWindow })
	if len(f) == 0 {
		delete(t.fails, client)
		return nil
	}
	t.fails[client] = f
	return f
}

// evict makes room in a full table: the clients without recent failures
// go, or else the one whose last failure is oldest. t.mu is held.
func (t *throttle) evict() {
	now := time.Now()
	oldest, at := "", time.Time{}
	for c, f := range t.fails {
		last := f[len(f)-1]
		if now.Sub(last) >= failWindow {
			delete(t.fails, c)
			continue
		}
		if oldest == "" || last.Before(at) {
			oldest, at = c, last
		}
	}
	if len(t.fails) >= maxClients {
		delete(t.fails, oldest)
	}
}

// client returns the address r comes from, as failures are counted: the
// peer's, or, when the peer is a trusted proxy, the right-most address of
// X-Forwarded-For that is not a trusted proxy's (the ones left of it may
// be made up by the client). IPv6 addresses count by their /64.
func (t *throttle) client(r *http.Request) string {
	peer, ok := parseAddr(r.RemoteAddr)
	if !ok {
		return r.RemoteAddr
	}
	if !t.isTrusted(peer) {
		return clientKey(peer)
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(h, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		a, ok := parseAddr(hop)
		switch {
		case !ok:
			// A trusted proxy wrote what is not an address: count
			// it as it stands, bounded.
			return "unparsed:" + hop[:min(len(hop), 64)]
		case !t.isTrusted(a):
			return clientKey(a)
		}
	}
	return clientKey(peer) // only proxies: the proxy's own request
}

func (t *throttle) isTrusted(a netip.Addr) bool {
	for _, p := range t.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseAddr reads an address with or without a port.
func parseAddr(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

func clientKey(a netip.Addr) string {
	if a.Is6() {
		p, _ := a.WithZone("").Prefix(ipv6Prefix)
		return p.String()
	}
	return a.String()
}

// ParseProxies reads a list of proxy addresses and networks (CIDR),
// separated by commas or white space; the error names the entry that is
// neither.
func ParseProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("entry %q is neither an address nor a network (want e.g. 127.0.0.1, ::1 or 10.0.0.0/8)", f)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// tooManyText answers a client that has used up its failures.
const tooManyText = "Too many wrong console tokens from your address in the last minute; wait a minute and try again."
