// Package httpserve holds what every HTTP server of the module needs
// alike: today, a shutdown that does not wait for connections that never
// sent a request.
//
// It imports nothing of the module.
package httpserve

import (
	"net"
	"net/http"
	"sync"
)

// CloseUnusedOnShutdown makes hs close, as soon as its Shutdown begins,
// the connections that have not sent a request yet. Call it before hs
// serves; it sets hs.ConnState.
//
// An HTTP client dials a connection ahead of a request and may send that
// request over another that came free first; the connection it dialed
// then waits in its pool, open and silent. net/http's Shutdown counts such
// a connection as busy for its first five seconds, so a shutdown with a
// grace of five seconds or less fails on it, and a longer one waits it
// out. Closing it loses nothing Shutdown would serve: net/http answers no
// request whose reading ends after Shutdown began, and closes its
// connection unanswered. A client that sends a request on it just then
// sees the request fail, as on a connection Shutdown closes idle.
func CloseUnusedOnShutdown(hs *http.Server) {
	var (
		mu     sync.Mutex
		unused = map[net.Conn]bool{}
	)
	hs.ConnState = func(c net.Conn, st http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		if st == http.StateNew {
			unused[c] = true
		} else {
			delete(unused, c)
		}
	}
	hs.RegisterOnShutdown(func() {
		mu.Lock()
		defer mu.Unlock()
		for c := range unused {
			_ = c.Close()
		}
	})
}
