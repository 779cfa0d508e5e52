package httpserve

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// pipeListener hands out the server ends of net.Pipe connections.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { close(l.closed); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{} }

// A connection that never sent a request does not hold Shutdown up, and
// is closed: on its own, net/http counts it busy for five seconds.
func TestShutdownClosesAConnectionThatSentNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
		hs := &http.Server{Handler: http.NotFoundHandler()}
		CloseUnusedOnShutdown(hs)
		served := make(chan error, 1)
		go func() { served <- hs.Serve(ln) }()

		client, server := net.Pipe()
		defer client.Close()
		ln.conns <- server
		synctest.Wait() // accepted, and waiting for a request

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := hs.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown with a connection that sent nothing: %v", err)
			hs.Close()
		}
		if n, err := client.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Errorf("the connection after Shutdown: read %d bytes, %v; want it closed", n, err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
}
