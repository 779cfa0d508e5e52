package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// lineWriter collects output and hands the first URL it sees to a channel.
type lineWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	url  chan string
	sent bool
}

var urlRE = regexp.MustCompile(`http://127\.0\.0\.1:\d+`)

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.sent {
		if u := urlRE.FindString(w.buf.String()); u != "" {
			w.sent = true
			w.url <- u
		}
	}
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestRefserverHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := runRefserver(t.Context(), shell{stdout: &stdout, stderr: &stderr}, []string{"--help"}); err != nil {
		t.Fatalf("--help: %v", err)
	}
	for _, want := range []string{"Usage: ticketbridge refserver", "-addr", "-seed", "-console-token", "-demo", "-fault-rate", "-latency"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, stdout.String())
		}
	}
}

func TestRefserverBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--nope"},
		{"--fault-rate", "1.5"},
		{"--fault-rate", "-0.1"},
		{"--latency", "-1s"},
		{"extra"},
		{"--log-level", "loud"},
	} {
		err := runRefserver(t.Context(), shell{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}, args)
		if !errors.Is(err, errUsage) {
			t.Errorf("%v: got %v, want a usage error", args, err)
		}
	}
}

func TestRefserverBadSeed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seed.json")
	if err := os.WriteFile(path, []byte(`{"organizations":[{"id":"o","keys":[{"name":"k","value":"nope"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	err := runRefserver(t.Context(), shell{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}, []string{"--addr", "127.0.0.1:0", "--seed", path})
	if err == nil || !strings.Contains(err.Error(), "organizations[0].keys[0].value") {
		t.Fatalf("got %v, want an error naming organizations[0].keys[0].value", err)
	}
}

func TestRefserverServesDemoAndShutsDown(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stdout := &lineWriter{url: make(chan string, 1)}
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- runRefserver(ctx, shell{stdout: stdout, stderr: &stderr}, []string{"--addr", "127.0.0.1:0", "--demo", "--log-format", "json"})
	}()
	var url string
	select {
	case url = <-stdout.url:
	case err := <-done:
		t.Fatalf("refserver ended before serving: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, "console token: console_") {
		t.Errorf("no generated console token printed:\n%s", out)
	}
	m := regexp.MustCompile(`demo-tickets-write\s+platform=read\s+tickets=write\s+(rta_\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no tickets-write key printed:\n%s", out)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/ops-public-api/v1/tickets?status=new", nil)
	req.Header.Set("Authorization", "Bearer "+m[1])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET tickets: %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if strings.Contains(stderr.String(), m[1]) {
		t.Errorf("a key appears in the log:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "refserver started") || !strings.Contains(stderr.String(), url) {
		t.Errorf("no start line with the URL in the log:\n%s", stderr.String())
	}
}
