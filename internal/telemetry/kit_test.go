package telemetry

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
)

// testTelemetry returns telemetry on a fake clock whose notifications go
// to the returned channel.
func testTelemetry(t *testing.T, cfg Options) (*Telemetry, *refservertest.Clock, chan string) {
	t.Helper()
	clock := refservertest.NewClock(t0)
	sent := make(chan string, 100)
	tel := New(nil, Options{Listen: cfg.Listen, CycleMax: cfg.CycleMax, Now: clock.Now, Notify: func(s string) error { sent <- s; return nil }, WatchdogEvery: -1})
	return tel, clock, sent
}

func drain(ch chan string) []string {
	var out []string
	for {
		select {
		case s := <-ch:
			out = append(out, s)
		default:
			return out
		}
	}
}

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "/metrics", nil)
	rec := &recorder{header: http.Header{}}
	h.ServeHTTP(rec, req)
	if rec.code != 0 && rec.code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.code, rec.body.String())
	}
	return rec.body.String()
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(c int) {
	if r.code == 0 {
		r.code = c
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(b)
}

// metricValue returns the value of the sample line that starts with
// series, or -1 when there is none.
func metricValue(t *testing.T, text, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return v
		}
	}
	return -1
}

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// closedPort returns an address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
