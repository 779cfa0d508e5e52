package testutil

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// PipeURL is the address of a PipeServer's handler: any host would do, as
// the transport dials the handler whatever the URL names.
const PipeURL = "http://127.0.0.1"

// PipeServer serves h over in-memory connections (net.Pipe) and returns a
// transport that dials it, both closed when the test ends. Made in a
// testing/synctest bubble, every wait on it is one the bubble's clock sees:
// an http.Client.Timeout ends an attempt the handler holds when the fake
// clock reaches it, and an answer takes no time at all, however busy the
// machine (an httptest server's socket is no such wait, and a short
// timeout on it races the machine).
func PipeServer(t testing.TB, h http.Handler) *http.Transport {
	t.Helper()
	ln := NewPipeListener()
	// The timeouts every server of the project sets; in a bubble they run
	// on its clock, past any the tests' clients set.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute, ReadTimeout: time.Minute,
		WriteTimeout: time.Minute, IdleTimeout: time.Minute}
	// The cleanup waits for every connection's goroutine to end: one that
	// answered without reading a whole body lingers (net/http waits a
	// moment before closing it), and a bubble must not end before it.
	var conns sync.WaitGroup
	srv.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			conns.Add(1)
		case http.StateClosed, http.StateHijacked:
			conns.Done()
		}
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return ln.Dial(ctx) }}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		_ = srv.Close()
		<-served
		conns.Wait()
	})
	return tr
}

// PipeListener is a net.Listener of in-memory connections (net.Pipe):
// Dial hands the server's end to Accept and returns the client's. In a
// testing/synctest bubble, a wait on either end is one the bubble sees.
type PipeListener struct {
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

// NewPipeListener returns a PipeListener that accepts until closed.
func NewPipeListener() *PipeListener {
	return &PipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Dial returns the client's end of a new connection once Accept has taken
// the server's.
func (l *PipeListener) Dial(ctx context.Context) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *PipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *PipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *PipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
