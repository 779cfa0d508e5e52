package statuspage

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHostChecked: the page answers only for the hosts it is opened at:
// the loopback names, with any port, and the external URL's host. A
// browser that opened another name, one whose address a site turned to
// 127.0.0.1 (DNS rebinding), is refused 421 with what to set, so that the
// site cannot read the page.
func TestHostChecked(t *testing.T) {
	s, err := New(Options{Hotels: only(newActingSource()), One: true, Token: testToken, ExternalHost: "bridge.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range []struct {
		host string
		want int
	}{
		{"127.0.0.1:9464", http.StatusOK},
		{"127.0.0.1", http.StatusOK},
		{"localhost:9464", http.StatusOK},
		{"LocalHost:1", http.StatusOK},
		{"[::1]:9464", http.StatusOK},
		{"bridge.example.com", http.StatusOK},
		{"Bridge.Example.com:443", http.StatusOK},
		{"evil.example", http.StatusMisdirectedRequest},
		{"evil.example:9464", http.StatusMisdirectedRequest},
		{"localhost.evil.example:9464", http.StatusMisdirectedRequest},
		{"127.0.0.1.nip.example", http.StatusMisdirectedRequest},
		{"bridge.example.com.evil.example", http.StatusMisdirectedRequest},
		{"10.1.2.3:9464", http.StatusMisdirectedRequest}, // not a wildcard listener
		{"", http.StatusMisdirectedRequest},
	} {
		for _, path := range []string{"/", "/tickets", "/login"} {
			r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9464"+path, nil)
			r.Host = c.host
			n++
			r.RemoteAddr = fmt.Sprintf("192.0.2.%d:4000", n) // a client each: no rate refuses
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, r)
			if rec.Code != c.want {
				t.Errorf("GET %s for host %q: %d, want %d", path, c.host, rec.Code, c.want)
				continue
			}
			if c.want == http.StatusMisdirectedRequest && !strings.Contains(rec.Body.String(), "TICKETBRIDGE_CONSOLE_ALLOWED_HOSTS") {
				t.Errorf("GET %s for host %q: the refusal does not name the setting:\n%s", path, c.host, rec.Body)
			}
		}
	}
}

// TestHostCheckSettings: the listen address's host and the allowed hosts
// are answered for; listening on every address, any IP address is too
// (Kubernetes probes and scrapes by the pod's address), never another
// name.
func TestHostCheckSettings(t *testing.T) {
	for _, c := range []struct {
		listen  string
		allowed []string
		yes, no []string
	}{
		{"127.0.0.1:9464", nil, []string{"localhost", "127.0.0.1:80"}, []string{"10.1.2.3", "bridge.internal", "evil.example"}},
		{"bridge-host:9464", []string{"bridge.internal", "10.9.8.7"}, []string{"Bridge-Host:9464", "bridge.internal:443", "bridge.internal.", "10.9.8.7:9464"}, []string{"10.1.2.3", "evil.example"}},
		{"0.0.0.0:9464", nil, []string{"10.1.2.3:9464", "[fd00::5]:9464", "localhost"}, []string{"pod.cluster.local", "evil.example", "10.1.2.3.evil.example"}},
		{":9464", []string{"bridge.internal"}, []string{"10.1.2.3", "bridge.internal"}, []string{"evil.example"}},
		{"[::]:9464", nil, []string{"[2001:db8::1]:9464", "192.0.2.1"}, []string{"evil.example"}},
		{"[fd00::5]:9464", nil, []string{"[fd00::5]:9464", "[FD00:0::5]"}, []string{"[fd00::6]:9464", "10.1.2.3"}},
	} {
		h := newHostCheck(c.listen, "", c.allowed)
		for _, host := range c.yes {
			if !h.allows(host) {
				t.Errorf("listening on %s, allowing %v: host %q refused", c.listen, c.allowed, host)
			}
		}
		for _, host := range c.no {
			if h.allows(host) {
				t.Errorf("listening on %s, allowing %v: host %q answered", c.listen, c.allowed, host)
			}
		}
	}
}

func TestParseHosts(t *testing.T) {
	got, err := ParseHosts(" Bridge.Internal, 10.9.8.7:9464 [fd00::5]:1\tops.example.")
	if want := []string{"bridge.internal", "10.9.8.7", "fd00::5", "ops.example"}; err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("ParseHosts: %q, %v; want %q", got, err, want)
	}
	for _, c := range []struct{ in, want string }{
		{"https://bridge.example.com/", `entry "https://bridge.example.com/" is a URL`},
		{"*.example.com", `entry "*.example.com" is a pattern`},
		{"user@bridge.internal", `entry "user@bridge.internal" is not a host name`},
	} {
		if _, err := ParseHosts(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseHosts(%q): %v, want an error with %q", c.in, err, c.want)
		}
	}
}
