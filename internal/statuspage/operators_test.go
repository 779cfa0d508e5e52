package statuspage

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
)

// The tests of this file run in a synctest bubble: a refusal held for its
// Retry-After costs no real time, and a request that is served at once
// takes no time on the bubble's clock.

// actingSource is a hotel whose pages draw at once and whose retries are
// counted.
type actingSource struct {
	blockingSource
	retries atomic.Int32
}

func (a *actingSource) Retry(id, _ string) (state.Entry, error) {
	a.retries.Add(1)
	return state.Entry{EventID: id, TicketID: "t-1"}, nil
}

func newActingSource() *actingSource {
	a := &actingSource{blockingSource: blockingSource{release: make(chan struct{})}}
	close(a.release)
	return a
}

// pageAt serves s to requests from client (an address and port) on the
// page's loopback address.
type pageAt struct {
	t *testing.T
	s *Server
}

func (p pageAt) send(method, path, client string, form url.Values, set func(*http.Request)) *httptest.ResponseRecorder {
	p.t.Helper()
	var r *http.Request
	if form != nil {
		r = httptest.NewRequest(method, "http://127.0.0.1:9464"+path, strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		r = httptest.NewRequest(method, "http://127.0.0.1:9464"+path, nil)
	}
	r.RemoteAddr = client
	if set != nil {
		set(r)
	}
	rec := httptest.NewRecorder()
	p.s.ServeHTTP(rec, r)
	return rec
}

func withCookies(cs ...*http.Cookie) func(*http.Request) {
	return func(r *http.Request) {
		for _, c := range cs {
			r.AddCookie(c)
		}
	}
}

func withBearer(tok string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

// signIn signs in as who with token from client and returns the answer
// to the form's POST (its code: 303 signed in) and the session cookie.
func (p pageAt) signIn(client, who, token string) (int, *http.Cookie) {
	p.t.Helper()
	return p.signInWith(client, who, token, nil)
}

// signInWith is signIn with both requests changed by set (nil: none), as
// a proxy would change them.
func (p pageAt) signInWith(client, who, token string, set func(*http.Request)) (int, *http.Cookie) {
	p.t.Helper()
	form := p.send(http.MethodGet, "/login", client, nil, set)
	m := csrfRE.FindStringSubmatch(form.Body.String())
	if form.Code != http.StatusOK || m == nil {
		p.t.Fatalf("the sign-in form from %s: %d", client, form.Code)
	}
	cookies := withCookies(form.Result().Cookies()...)
	rec := p.send(http.MethodPost, "/login", client, url.Values{"name": {who}, "token": {token}, "csrf": {m[1]}}, func(r *http.Request) {
		cookies(r)
		if set != nil {
			set(r)
		}
	})
	for _, c := range rec.Result().Cookies() {
		if c.Name == cookieName {
			return rec.Code, c
		}
	}
	return rec.Code, nil
}

// operatorsAct checks that a signed-in user (session, whose page offers
// csrf) and the CLI, both on client, act at once: their retries are done,
// not refused nor held.
func operatorsAct(t *testing.T, p pageAt, src *actingSource, client string, session *http.Cookie, csrf string) {
	t.Helper()
	before := src.retries.Load()
	start := time.Now()
	if rec := p.send(http.MethodPost, "/retry?id=ev-1", client, url.Values{"csrf": {csrf}}, withCookies(session)); rec.Code != http.StatusSeeOther || time.Since(start) != 0 {
		t.Errorf("a signed-in retry from %s: %d after %s, want 303 at once:\n%s", client, rec.Code, time.Since(start), rec.Body)
	}
	start = time.Now()
	if rec := p.send(http.MethodPost, "/retry?id=ev-2", client, url.Values{}, withBearer(testToken)); rec.Code != http.StatusOK || time.Since(start) != 0 {
		t.Errorf("the CLI's retry from %s: %d after %s, want 200 at once:\n%s", client, rec.Code, time.Since(start), rec.Body)
	}
	if n := src.retries.Load() - before; n != 2 {
		t.Errorf("%d retries done, want 2", n)
	}
}

// flood sends views from the clients at once, as many as there are views
// a second in a burst and as many again, and returns when each has been
// answered or is held: the views' budget is spent. wait waits for the
// held ones to be answered.
func flood(t *testing.T, p pageAt, clients ...string) (wait func()) {
	var wg gosync.WaitGroup
	for _, c := range clients {
		for range 2 * defaultViewRate * burstSeconds {
			wg.Go(func() { p.send(http.MethodGet, "/", c, nil, nil) })
		}
	}
	synctest.Wait()
	return wg.Wait
}

// TestFloodLeavesOperatorsIn: neither a flood of views nor wrong tokens
// sent from the operators' own address (on loopback, every local user's)
// keeps a signed-in user or the CLI from acting, nor anyone from signing
// in with the right token.
func TestFloodLeavesOperatorsIn(t *testing.T) {
	const local = "127.0.0.1:50000"
	setUp := func(t *testing.T) (pageAt, *actingSource, *http.Cookie, string) {
		src := newActingSource()
		s, err := New(Options{Hotels: only(src), One: true, Token: testToken})
		if err != nil {
			t.Fatal(err)
		}
		p := pageAt{t: t, s: s}
		code, session := p.signIn(local, "Ines", testToken)
		if code != http.StatusSeeOther || session == nil {
			t.Fatalf("sign-in before the flood: %d", code)
		}
		m := csrfRE.FindStringSubmatch(p.send(http.MethodGet, "/", local, nil, withCookies(session)).Body.String())
		if m == nil {
			t.Fatal("the signed-in page offers no CSRF token")
		}
		return p, src, session, m[1]
	}
	t.Run("views", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p, src, session, csrf := setUp(t)
			// From the operators' address and from enough others to
			// spend every view a second.
			wait := flood(t, p, local, "192.0.2.1:1", "192.0.2.2:1", "192.0.2.3:1", "192.0.2.4:1", "192.0.2.5:1")
			operatorsAct(t, p, src, local, session, csrf)
			if code, _ := p.signIn(local, "Ana", testToken); code != http.StatusSeeOther {
				t.Errorf("sign-in with the right token during the flood: %d, want 303", code)
			}
			// Last: a refusal is held a second, and the views come back.
			if rec := p.send(http.MethodGet, "/", local, nil, nil); rec.Code != http.StatusTooManyRequests {
				t.Errorf("a view during the flood: %d, want 429 (the flood did not spend the views)", rec.Code)
			}
			wait()
		})
	})
	t.Run("sign-in forms", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p, _, _, _ := setUp(t)
			// A local user asks for the form as fast as they can: every
			// sign-in's budget the address has, and more.
			var wg gosync.WaitGroup
			for range 2 * signInRate * burstSeconds {
				wg.Go(func() { p.send(http.MethodGet, "/login", local, nil, nil) })
			}
			synctest.Wait()
			if code, _ := p.signIn(local, "Ana", testToken); code != http.StatusSeeOther {
				t.Errorf("sign-in with the right token while the form is asked for in a loop: %d, want 303", code)
			}
			wg.Wait()
		})
	})
	t.Run("wrong tokens", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p, src, session, csrf := setUp(t)
			wrong := strings.Repeat("x", len(testToken))
			for i := range loginFails + 2 {
				rec := p.send(http.MethodPost, "/retry?id=ev-9", local, url.Values{}, withBearer(wrong))
				if want := http.StatusForbidden; i >= loginFails {
					if want = http.StatusTooManyRequests; rec.Code != want {
						t.Fatalf("wrong token %d: %d, want %d", i+1, rec.Code, want)
					}
				} else if rec.Code != want {
					t.Fatalf("wrong token %d: %d, want %d", i+1, rec.Code, want)
				}
			}
			if code, _ := p.signIn(local, "Eve", wrong); code != http.StatusTooManyRequests {
				t.Errorf("a wrong sign-in after %d wrong tokens: %d, want 429", loginFails, code)
			}
			operatorsAct(t, p, src, local, session, csrf)
			if code, _ := p.signIn(local, "Ana", testToken); code != http.StatusSeeOther {
				t.Errorf("sign-in with the right token from the address that guessed: %d, want 303", code)
			}
		})
	})
}

// TestViewsSharedByClients: a client asking for views as fast as it can
// takes its share of them, and another client's views are drawn.
func TestViewsSharedByClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newActingSource()
		// Views wait their turn however many: the rate alone decides.
		s, err := New(Options{Hotels: only(src), One: true, Waiting: 4 * defaultViewRate * burstSeconds})
		if err != nil {
			t.Fatal(err)
		}
		p := pageAt{t: t, s: s}
		wait := flood(t, p, "192.0.2.1:1")
		src.mu.Lock()
		drawn := src.snapshots
		src.mu.Unlock()
		if drawn >= defaultViewRate*burstSeconds {
			t.Errorf("one client had %d views drawn in a burst, every view of the burst", drawn)
		}
		for i := range 3 {
			if rec := p.send(http.MethodGet, "/", fmt.Sprintf("198.51.100.%d:1", i+1), nil, nil); rec.Code != http.StatusOK {
				t.Errorf("a view from another client during the flood: %d, want 200", rec.Code)
			}
		}
		// Last: a refusal is held a second, and the views come back.
		if rec := p.send(http.MethodGet, "/", "192.0.2.1:2", nil, nil); rec.Code != http.StatusTooManyRequests {
			t.Errorf("another view from the flooding client: %d, want 429", rec.Code)
		}
		wait()
	})
}
