package testutil

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// Scrape serves GET /metrics from h and returns the text, failing t on an
// answer other than 200.
func Scrape(t testing.TB, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body.String())
	}
	return rec.Body.String()
}

// MetricValue returns the value of the sample line of text that starts
// with series (its name and labels as exposed), or -1 when there is none.
func MetricValue(t testing.TB, text, series string) float64 {
	t.Helper()
	for line := range strings.SplitSeq(text, "\n") {
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

// GrepLines returns the lines of text that contain sub, joined by newlines.
func GrepLines(text, sub string) string {
	var out []string
	for line := range strings.SplitSeq(text, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// ClosedPort returns a loopback address nothing listens on.
func ClosedPort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
