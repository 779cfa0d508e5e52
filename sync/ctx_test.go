package sync_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	gosync "sync"
	"testing"

	"github.com/ticketbridge/ticketbridge/state/statetest"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// hangProxy forwards TCP connections to a database until hang is called;
// from then on it forwards nothing the client sends, as a database that
// stopped answering, and says so on held once a client has sent.
type hangProxy struct {
	ln     net.Listener
	target string
	held   chan struct{}

	mu    gosync.Mutex
	hung  bool
	once  gosync.Once
	conns []net.Conn
}

func newHangProxy(t *testing.T, dbURL string) (*hangProxy, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &hangProxy{ln: ln, target: u.Host, held: make(chan struct{})}
	t.Cleanup(p.close)
	go p.serve()
	u.Host = ln.Addr().String()
	return p, u.String()
}

func (p *hangProxy) hang() {
	p.mu.Lock()
	p.hung = true
	p.mu.Unlock()
}

func (p *hangProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

func (p *hangProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(c, s) }()
		go p.forward(s, c)
	}
}

// forward copies what the client sends to the server, unless hung.
func (p *hangProxy) forward(s, c net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			p.mu.Lock()
			hung := p.hung
			p.mu.Unlock()
			if hung {
				p.once.Do(func() { close(p.held) })
				continue // swallowed: the database does not answer
			}
			if _, err := s.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestCycleEndsWhileDatabaseHangs: a cycle whose context ends while it
// waits on a PostgreSQL that does not answer returns, interrupted, without
// waiting for the round trip's own timeout.
func TestCycleEndsWhileDatabaseHangs(t *testing.T) {
	e := newEnv(t)
	proxy, via := newHangProxy(t, statetest.PostgresURL(t))
	e.path = via
	e.newTicket("Two towels to room 214")
	e.open()
	if r := e.tick(); !r.Synced {
		t.Fatalf("the first cycle: %s", r)
	}

	proxy.hang()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type result struct {
		rep tbsync.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := e.engine.RunCycle(ctx)
		done <- result{rep, err}
	}()
	<-proxy.held // the cycle waits on the database
	cancel()
	r := <-done
	if !errors.Is(r.err, tbsync.ErrInterrupted) || r.rep.Outcome != tbsync.OutcomeInterrupted {
		t.Fatalf("error %v, report %s: want an interrupted cycle", r.err, r.rep)
	}
}
