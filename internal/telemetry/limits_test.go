package telemetry

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/sync"
)

// countingBody is a request body of n bytes that counts what is read of it.
type countingBody struct{ n, read int }

func (b *countingBody) Read(p []byte) (int, error) {
	if b.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), b.n)
	for i := range k {
		p[i] = 'x'
	}
	b.n -= k
	b.read += k
	return k, nil
}

// TestTelemetryBodyLimits: the metrics and health listener reads at most
// telemetryBodyMax bytes of any request body, whatever the method and
// path, answers a write method with 405 without waiting for its body, and
// refuses headers over telemetryHeadMax. (The other servers: the reference
// server in refserver's TestOversizedBodiesRefused, the webhook inbound
// endpoint in webhook's TestInboundAnswers, "too large".)
func TestTelemetryBodyLimits(t *testing.T) {
	tel, _ := testTelemetry(t, Options{CycleMax: time.Hour})
	h := tel.Handler(nil)
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut} {
		for _, path := range []string{"/metrics", "/healthz", "/readyz", "/", "/nothing"} {
			body := &countingBody{n: 10 << 20}
			req := httptest.NewRequest(method, path, body)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if body.read > telemetryBodyMax+1 {
				t.Errorf("%s %s: read %d bytes of the body, the limit is %d", method, path, body.read, telemetryBodyMax)
			}
			if (method == http.MethodPost || method == http.MethodPut) && rec.Code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: %d, want 405", method, path, rec.Code)
			}
		}
	}

	// On a real listener.
	tel.cfg.Listen = "127.0.0.1:0"
	sched, _ := sync.ParseSchedule("@every 30s")
	if err := tel.Start(context.Background(), nil, sched, 30*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	defer tel.Stop()
	status := func(head string) string {
		t.Helper()
		conn, err := net.Dial("tcp", tel.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, head); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		return strings.TrimSpace(line)
	}
	// A body of 10 MiB announced, none sent: the answer does not wait for it.
	if got := status("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 10485760\r\n\r\n"); got != "HTTP/1.1 405 Method Not Allowed" {
		t.Errorf("POST with a 10 MiB body announced: %q", got)
	}
	big := fmt.Sprintf("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\n\r\n", strings.Repeat("a", 4*telemetryHeadMax))
	if got := status(big); !strings.HasPrefix(got, "HTTP/1.1 431") {
		t.Errorf("GET with %d bytes of headers: %q, want 431", len(big), got)
	}
}
