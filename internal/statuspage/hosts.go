package statuspage

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// The page answers only for the hosts it is opened at. A site the
// operator visits may turn its own name to 127.0.0.1 (DNS rebinding):
// the browser then sends the site's scripts' requests to the page, with
// the site's name as Host, and lets the site read the answers. The page
// refuses such a Host with 421, so that nothing of it is read so.
//
// It answers for the loopback names (localhost, 127.0.0.1 and ::1), the
// host it listens on ([Options].Listen), the external URL's host
// ([Options].ExternalHost) and [Options].AllowedHosts, with any port;
// listening on every address (0.0.0.0, :: or no host), also for any IP
// address, as Kubernetes probes and scrapes by the pod's address (a
// rebinding site has a name, never an address). The daemon's /metrics,
// /healthz and /readyz are not the page's, and answer whatever the host.

// hostCheck is the hosts the page answers for.
type hostCheck struct {
	names map[string]bool // hostName of each
	anyIP bool            // listening on every address: any IP address too
}

func newHostCheck(listen, external string, allowed []string) hostCheck {
	h := hostCheck{names: map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}}
	for _, a := range append([]string{external}, allowed...) {
		if n := hostName(a); n != "" {
			h.names[n] = true
		}
	}
	if listen != "" {
		host, _, err := net.SplitHostPort(listen)
		if err != nil {
			host = listen
		}
		n := hostName(host)
		if a, err := netip.ParseAddr(n); n == "" || (err == nil && a.IsUnspecified()) {
			h.anyIP = true
		} else {
			h.names[n] = true
		}
	}
	return h
}

// allows reports whether the page answers for host, a Host header.
func (h hostCheck) allows(host string) bool {
	n := hostName(host)
	switch {
	case n == "":
		return false
	case h.names[n]:
		return true
	case h.anyIP:
		_, err := netip.ParseAddr(n)
		return err == nil
	}
	return false
}

// hostName is the host of a Host header or a setting, without its port,
// brackets or final dot, in lower case; an address in its usual form.
func hostName(s string) string {
	s = strings.TrimSpace(s)
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	} else {
		s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	}
	s = strings.ToLower(strings.TrimSuffix(s, "."))
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone("").String()
	}
	return s
}

// refuseHost answers a request for a host the page does not answer for.
func refuseHost(w http.ResponseWriter, host string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusMisdirectedRequest)
	fmt.Fprintf(w, "This status page does not answer for the host %q. Open it at the address the daemon listens on (TICKETBRIDGE_LISTEN), at localhost or at TICKETBRIDGE_CONSOLE_EXTERNAL_URL; to open it under another name, add the name to TICKETBRIDGE_CONSOLE_ALLOWED_HOSTS.\n",
		host[:min(len(host), 100)])
}

// ParseHosts reads a list of host names or addresses, separated by
// commas or white space; a port is allowed and ignored. The error names
// the entry that is a URL, a pattern or empty.
func ParseHosts(s string) ([]string, error) {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		n := hostName(f)
		switch {
		case strings.Contains(f, "/"):
			return nil, fmt.Errorf("entry %q is a URL; want a host name or address such as bridge.internal or 10.0.0.5", f)
		case strings.ContainsAny(n, "*?"):
			return nil, fmt.Errorf("entry %q is a pattern; want each host name as it is, such as bridge.internal", f)
		case n == "" || (strings.ContainsAny(n, "@[]:") && !isAddr(n)):
			return nil, fmt.Errorf("entry %q is not a host name; want one such as bridge.internal or 10.0.0.5", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func isAddr(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}
