package statuspage

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	gosync "sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/testutil"
	"github.com/ticketbridge/ticketbridge/state"
)

// guessingPage is a page with the console token, trusting the proxies
// trusted, whose log is the buffer returned; made in a synctest bubble,
// the wrong tokens it counts are counted on the bubble's clock.
func guessingPage(t *testing.T, trusted ...netip.Prefix) (pageAt, *testutil.Buffer) {
	t.Helper()
	logs := &testutil.Buffer{}
	s, err := New(Options{Hotels: only(newActingSource()), One: true, Token: testToken, TrustedProxies: trusted,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return pageAt{t: t, s: s}, logs
}

// proxy is the address of the proxy in front of a guessingPage, which
// trusts it when told to.
const proxy = "127.0.0.1:4000"

var proxyNet = netip.MustParsePrefix("127.0.0.1/32")

// forwardedFor sets the X-Forwarded-For header a proxy sends for addr.
func forwardedFor(addr string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("X-Forwarded-For", addr) }
}

// TestWrongTokensCountedPerClient: of the wrong tokens from one client
// within a minute, five are answered as wrong and the rest as too many;
// another client is not affected; the right token signs in from the
// guessing client too. It runs in a bubble: the minute passes on its
// clock.
func TestWrongTokensCountedPerClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, logs := guessingPage(t, proxyNet)
		const wrong = "wrong-wrong-wrong-wrong-wrong-wrong"
		guess := func(client string) int {
			t.Helper()
			code, _ := p.signInWith(proxy, "", wrong, forwardedFor(client))
			return code
		}
		for i := range loginFails {
			if code := guess("203.0.113.7"); code != http.StatusForbidden {
				t.Fatalf("wrong token %d: %d", i+1, code)
			}
		}
		if code := guess("203.0.113.7"); code != http.StatusTooManyRequests {
			t.Fatalf("wrong token %d: %d, want 429", loginFails+1, code)
		}
		if code := guess("198.51.100.9"); code != http.StatusForbidden {
			t.Fatalf("a wrong token from another address: %d, want 403", code)
		}
		// The right token is never refused: the client may be every local
		// user at once.
		if code, _ := p.signInWith(proxy, "Ines", testToken, forwardedFor("203.0.113.7")); code != http.StatusSeeOther {
			t.Fatalf("right token from the guessing address: %d, want 303", code)
		}
		time.Sleep(failWindow - time.Second)
		if code := guess("203.0.113.7"); code != http.StatusTooManyRequests {
			t.Fatalf("a wrong token before the window passed: %d, want 429", code)
		}
		time.Sleep(time.Second)
		if code := guess("203.0.113.7"); code != http.StatusForbidden {
			t.Fatalf("a wrong token a minute later: %d, want 403", code)
		}
		if logs := logs.String(); !strings.Contains(logs, "client=203.0.113.7") || strings.Contains(logs, testToken) {
			t.Errorf("the refusals do not name the client, or the log holds the token:\n%s", logs)
		}
	})
}

func TestBearerGuessesAreCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := guessingPage(t, proxyNet)
		bearerFrom := func(tok string) func(*http.Request) {
			return func(r *http.Request) {
				forwardedFor("203.0.113.7")(r)
				withBearer(tok)(r)
			}
		}
		wrong := bearerFrom(strings.Repeat("x", len(testToken)))
		for i := range loginFails {
			if rec := p.send(http.MethodPost, "/retry?id=ev-refused", proxy, url.Values{}, wrong); rec.Code != http.StatusForbidden {
				t.Fatalf("bearer guess %d: %d", i+1, rec.Code)
			}
		}
		if rec := p.send(http.MethodPost, "/retry?id=ev-refused", proxy, url.Values{}, wrong); rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "wait a minute") {
			t.Fatalf("bearer guess %d: %d %s, want 429", loginFails+1, rec.Code, rec.Body)
		}
		// One count for both ways in.
		if code, _ := p.signInWith(proxy, "", "wrong-wrong-wrong-wrong-wrong-wrong", forwardedFor("203.0.113.7")); code != http.StatusTooManyRequests {
			t.Fatalf("a wrong sign-in after %d bearer guesses: %d, want 429", loginFails, code)
		}
		if rec := p.send(http.MethodPost, "/retry?id=ev-refused", proxy, url.Values{}, bearerFrom(testToken)); rec.Code != http.StatusOK {
			t.Fatalf("the token as bearer from the guessing address: %d %s", rec.Code, rec.Body)
		}
	})
}

func TestForwardedForIgnoredFromUntrustedPeer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := guessingPage(t) // no trusted proxy
		const wrong = "wrong-wrong-wrong-wrong-wrong-wrong"
		for i := range loginFails {
			p.signInWith(proxy, "", wrong, forwardedFor(fmt.Sprintf("203.0.113.%d", i)))
		}
		// Every guess counted against the peer, whatever it claimed.
		if code, _ := p.signInWith(proxy, "", wrong, forwardedFor("198.51.100.9")); code != http.StatusTooManyRequests {
			t.Fatalf("a wrong sign-in claiming another address after %d guesses: %d, want 429", loginFails, code)
		}
	})
}

// TestParallelGuessesJudgedUpToTheAllowance: wrong tokens sent at once
// from one client are judged and counted in one step, so that however they
// interleave no more than loginFails of them are answered as wrong (and
// logged); the others are refused as too many.
func TestParallelGuessesJudgedUpToTheAllowance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rounds, guesses = 32, 16
		logs := &testutil.Buffer{}
		src := &blockingSource{release: make(chan struct{})}
		close(src.release)
		s, err := New(Options{Hotels: only(src), One: true, Token: testToken, Renders: guesses, Waiting: guesses, ViewRate: -1,
			Logger: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		for round := range rounds {
			client := fmt.Sprintf("192.0.2.%d:4000", round+1)
			start := make(chan struct{})
			codes := make(chan int, guesses)
			var wg gosync.WaitGroup
			for range guesses {
				r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:9464/retry?id=ev-refused", nil)
				r.RemoteAddr = client
				r.Header.Set("Authorization", "Bearer "+strings.Repeat("x", 8<<10)) // long: slow to hash
				wg.Go(func() {
					<-start
					rec := httptest.NewRecorder()
					s.ServeHTTP(rec, r)
					codes <- rec.Code
				})
			}
			close(start)
			wg.Wait()
			close(codes)
			got := map[int]int{}
			for c := range codes {
				got[c]++
			}
			if got[http.StatusForbidden] != loginFails || got[http.StatusTooManyRequests] != guesses-loginFails {
				t.Fatalf("round %d: %d guesses at once from %s were answered %v; want %d wrong (403) and the rest too many (429)",
					round+1, guesses, client, got, loginFails)
			}
			time.Sleep(failWindow) // the bubble's clock: the next round starts afresh
		}
		if n := strings.Count(logs.String(), "wrong token"); n != rounds*loginFails {
			t.Errorf("%d wrong tokens logged, want %d", n, rounds*loginFails)
		}
	})
}

func TestThrottleClient(t *testing.T) {
	trusted, err := ParseProxies("127.0.0.1, 10.0.0.0/8 ::1")
	if err != nil {
		t.Fatal(err)
	}
	th := newThrottle(trusted)
	for _, c := range []struct {
		peer string
		xff  []string
		want string
	}{
		{"192.0.2.1:4000", nil, "192.0.2.1"},
		{"192.0.2.1:4000", []string{"198.51.100.9"}, "192.0.2.1"}, // not a proxy's
		{"127.0.0.1:4000", nil, "127.0.0.1"},
		{"127.0.0.1:4000", []string{"198.51.100.9"}, "198.51.100.9"},
		{"127.0.0.1:4000", []string{"1.1.1.1, 198.51.100.9, 10.1.2.3"}, "198.51.100.9"}, // right-most not trusted
		{"127.0.0.1:4000", []string{"1.1.1.1", "198.51.100.9,10.1.2.3"}, "198.51.100.9"},
		{"127.0.0.1:4000", []string{"10.9.9.9, 10.1.2.3"}, "127.0.0.1"},
		{"[::1]:4000", []string{"2001:db8:1:2:3:4:5:6"}, "2001:db8:1:2::/64"},
		{"[::ffff:127.0.0.1]:4000", []string{"[2001:db8::1]:555"}, "2001:db8::/64"},
		{"127.0.0.1:4000", []string{"not an address"}, "unparsed:not an address"},
	} {
		r := httptest.NewRequest("POST", "/login", nil)
		r.RemoteAddr = c.peer
		for _, h := range c.xff {
			r.Header.Add("X-Forwarded-For", h)
		}
		if got := th.client(r); got != c.want {
			t.Errorf("client of %s with X-Forwarded-For %q = %q, want %q", c.peer, c.xff, got, c.want)
		}
	}
	if _, err := ParseProxies("127.0.0.1, proxy.example"); err == nil || !strings.Contains(err.Error(), `"proxy.example"`) {
		t.Errorf("ParseProxies with a host name: %v", err)
	}
}

// TestThrottleTableIsBounded runs in a bubble: the clients' failures are
// a millisecond apart on its clock.
func TestThrottleTableIsBounded(t *testing.T) { synctest.Test(t, testThrottleTableIsBounded) }

func testThrottleTableIsBounded(t *testing.T) {
	th := newThrottle(nil)
	for i := range maxClients + 10 {
		th.wrong(fmt.Sprintf("client-%d", i))
		time.Sleep(time.Millisecond)
	}
	if n := len(th.fails); n > maxClients {
		t.Fatalf("%d clients kept, want at most %d", n, maxClients)
	}
	if _, ok := th.fails["client-0"]; ok {
		t.Error("the oldest client is kept in a full table")
	}
	if _, ok := th.fails[fmt.Sprintf("client-%d", maxClients+9)]; !ok {
		t.Error("the newest client is not kept")
	}
}

// session returns the session cookie a sign-in as who set.
func session(t *testing.T, p *testPage, who string) *http.Cookie {
	t.Helper()
	resp := p.login(who, testToken)
	for _, c := range resp.Cookies() {
		if c.Name == cookieName {
			return c
		}
	}
	t.Fatalf("sign-in as %s set no session cookie (%d)", who, resp.StatusCode)
	return nil
}

// send sends method path to p with the cookie c alone (no jar) and the
// form, and returns the answer's code and the CSRF token its page offers:
// "" when not signed in.
func send(t *testing.T, p *testPage, c *http.Cookie, method, path string, form url.Values) (int, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, testutil.PipeURL+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.AddCookie(c)
	resp, err := p.tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if m := csrfRE.FindStringSubmatch(string(b)); m != nil {
		return resp.StatusCode, m[1]
	}
	return resp.StatusCode, ""
}

func TestSignOutEndsTheSession(t *testing.T) { atT0(t, testSignOutEndsTheSession) }

func testSignOutEndsTheSession(t *testing.T) {
	p := newTestPage(t, testToken)
	ines := session(t, p, "Ines") // a copy of it is kept, as a thief would
	_, csrf := send(t, p, ines, "GET", "/", nil)
	if csrf == "" {
		t.Fatal("the session cookie does not sign in")
	}
	ana := session(t, p, "Ana") // in another browser
	_, anaCSRF := send(t, p, ana, "GET", "/", nil)
	if code, _ := send(t, p, ana, "POST", "/logout", url.Values{"csrf": {anaCSRF}}); code != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", code)
	}
	if _, c := send(t, p, ana, "GET", "/", nil); c != "" {
		t.Fatal("the cookie kept from before sign-out still signs in")
	}
	if _, c := send(t, p, ines, "GET", "/", nil); c == "" {
		t.Fatal("one user's sign-out ended another's session")
	}
	if code, _ := send(t, p, ines, "POST", "/logout", url.Values{"csrf": {csrf}}); code != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", code)
	}
	if code, _ := send(t, p, ines, "POST", "/retry?id=ev-refused", url.Values{"csrf": {csrf}}); code != http.StatusForbidden {
		t.Fatalf("retry with a cookie kept from before sign-out: %d, want 403", code)
	}
	if e := p.entry("ev-refused"); e.State != state.Failed {
		t.Fatalf("a signed-out cookie changed the entry: %+v", e)
	}
}

func TestNewTokenOrRestartEndsSessions(t *testing.T) { atT0(t, testNewTokenOrRestartEndsSessions) }

func testNewTokenOrRestartEndsSessions(t *testing.T) {
	p := newTestPage(t, testToken)
	c := session(t, p, "Ines")
	if _, csrf := send(t, p, c, "GET", "/", nil); csrf == "" {
		t.Fatal("the session cookie does not sign in")
	}
	// The daemon takes a new token at its restart: neither a new token
	// nor the same one lets the session of before in.
	for _, tok := range []string{testToken + "-new", testToken} {
		q := newTestPage(t, tok)
		if _, csrf := send(t, q, c, "GET", "/", nil); csrf != "" {
			t.Errorf("a session of before the restart signs in (same token: %v)", tok == testToken)
		}
	}
}

func TestSecureCookies(t *testing.T) { atT0(t, testSecureCookies) }

func testSecureCookies(t *testing.T) {
	for _, secure := range []bool{false, true} {
		p := newTestPageWith(t, testToken, func(o *Options) { o.SecureCookie = secure })
		resp, _ := p.do("GET", "/login", nil, nil)
		cookies := resp.Cookies()
		cookies = append(cookies, p.login("Ines", testToken).Cookies()...)
		if len(cookies) != 2 {
			t.Fatalf("%d cookies set, want the sign-in form's and the session's", len(cookies))
		}
		for _, c := range cookies {
			if c.Secure != secure {
				t.Errorf("SecureCookie %v: cookie %s has Secure %v", secure, c.Name, c.Secure)
			}
		}
	}
}

// TestSessionsAreBounded runs in a bubble: the sessions expire on its
// clock.
func TestSessionsAreBounded(t *testing.T) { synctest.Test(t, testSessionsAreBounded) }

func testSessionsAreBounded(t *testing.T) {
	a := newAuth(testToken)
	signedIn := func(value string) bool {
		r := httptest.NewRequest("GET", "/", nil)
		r.AddCookie(&http.Cookie{Name: cookieName, Value: value})
		_, _, ok := a.user(r)
		return ok
	}
	first, _ := a.session("first")
	time.Sleep(time.Second)
	var last string
	for range maxSessions {
		last, _ = a.session("later")
	}
	if n := len(a.sessions); n > maxSessions {
		t.Fatalf("%d sessions kept, want at most %d", n, maxSessions)
	}
	if signedIn(first) || !signedIn(last) {
		t.Errorf("a full table kept the session that expires first (%v) or dropped the newest (%v)", signedIn(first), !signedIn(last))
	}
	// Expired sessions make room before any live one goes.
	time.Sleep(sessionLife)
	if signedIn(last) {
		t.Error("a session past its life signs in")
	}
	a.session("next")
	if n := len(a.sessions); n != 1 {
		t.Errorf("%d sessions kept after all expired and one began, want 1", n)
	}
}
