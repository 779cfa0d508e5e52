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
	s, err := New(Options{Source: newActingSource(), Token: testToken, ExternalHost: "bridge.example.com"})
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
