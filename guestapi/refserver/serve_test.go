package refserver

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
)

// serving starts a server's Serve on a loopback port; stop ends its
// context and returns what Serve returned.
func serving(t *testing.T) (s *Server, ln net.Listener, stop func() error) {
	t.Helper()
	s = New(Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	return s, ln, func() error { cancel(); return <-done }
}

// TestServeUntilCancelled: Serve answers on its listener until its
// context ends, then returns nil.
func TestServeUntilCancelled(t *testing.T) {
	s, ln, stop := serving(t)

	url := "http://" + ln.Addr().String() + ConsolePath + "/stats"
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+s.ConsoleToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("console stats: %s", resp.Status)
	}
	http.DefaultClient.CloseIdleConnections()
	if err := stop(); err != nil {
		t.Fatalf("Serve after its context ended: %v", err)
	}
}

// TestServeFailsOnAClosedListener: Serve returns the error that stops it
// before its context ends.
func TestServeFailsOnAClosedListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if err := New(Options{}).Serve(context.Background(), ln); err == nil {
		t.Fatal("Serve on a closed listener returned nil")
	}
}

// TestServeStopsWithAConnectionThatSentNothing: a connection that never
// sent a request (an HTTP client dials one ahead and may never use it)
// does not hold Serve's shutdown up; net/http alone waits five seconds for
// such a connection, as long as Serve's whole grace.
func TestServeStopsWithAConnectionThatSentNothing(t *testing.T) {
	_, ln, stop := serving(t)

	silent, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// A request on a second connection, answered: the server accepts in
	// order, so it has accepted the silent one too.
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("http://" + ln.Addr().String() + "/v1/tickets")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	if err := stop(); err != nil {
		t.Fatalf("Serve after its context ended: %v", err)
	}
	if n, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the silent connection after Serve returned: read %d bytes, %v; want it closed", n, err)
	}
}
