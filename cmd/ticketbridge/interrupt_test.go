package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/sync"
)

// TestOnceInterrupted: Ctrl-C (the command's context cancelled) in the
// middle of once's cycle is an interrupt, not a failure: once says so at
// INFO, exits 130, and the stored cycle is interrupted, not failed, as is
// the last cycle of the status snapshot it writes; the next once resumes
// and syncs.
func TestOnceInterrupted(t *testing.T) {
	b := newBridge(t)
	id := b.ticket("a spare blanket")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	upstream, err := url.Parse(b.ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	// The first API request arrives: Ctrl-C, and the request waits for the
	// client to give up.
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ctx.Err() == nil {
			cancel()
			<-r.Context().Done()
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	b.vars["TICKETBRIDGE_API_URL"] = front.URL

	var out, errb bytes.Buffer
	code := exitCode(run(ctx, []string{"once", "--env-file", b.envFile()}, &out, &errb), &errb)
	if code != exitInterrupted {
		t.Fatalf("once interrupted: exit %d, want %d\n%s%s", code, exitInterrupted, out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "ticketbridge: interrupted; the next run resumes") {
		t.Errorf("once interrupted does not say so:\n%s", errb.String())
	}
	if strings.Contains(errb.String(), "level=ERROR") || strings.Contains(errb.String(), "cycle failed") {
		t.Errorf("an interrupt is logged as a failure:\n%s", errb.String())
	}
	if !strings.Contains(out.String(), "interrupted") {
		t.Errorf("the report lacks the outcome:\n%s", out.String())
	}
	for _, line := range strings.Split(out.String()+errb.String(), "\n") {
		if m := doubled(line); m != "" {
			t.Errorf("%q says a prefix twice:\n%s", m, line)
		}
	}

	// The status snapshot is written all the same, with the interrupted
	// cycle: a daemon started next shows it until its first cycle.
	if strings.Contains(errb.String(), "write status snapshot") {
		t.Errorf("once interrupted did not write the status snapshot:\n%s", errb.String())
	}
	if snap, err := bridge.ReadSnapshot(b.vars["TICKETBRIDGE_STATE"] + bridge.StatusSuffix); err != nil {
		t.Errorf("the daemon %v", err)
	} else if snap.LastCycle == nil || snap.LastCycle.Outcome != sync.OutcomeInterrupted {
		t.Errorf("the snapshot's last cycle is %+v, want the interrupted one", snap.LastCycle)
	}
	stat, errOut, code := b.cmd("status")
	if code != 0 || !strings.Contains(stat, "interrupted") || strings.Contains(stat, "failed") {
		t.Errorf("status after an interrupt: exit %d\n%s%s", code, stat, errOut)
	}
	if out, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("the next once: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := b.cmd("status", id[:8]); code != 0 {
		t.Fatalf("the request after the next once: exit %d\n%s", code, errOut)
	}
}

// doubled returns the error prefix line says twice in a row ("run cycle:
// run cycle: ..."), "" when none.
func doubled(line string) string {
	parts := strings.Split(line, ": ")
	for i := 1; i < len(parts)-1; i++ {
		prev := strings.TrimSpace(parts[i-1])
		if f := strings.Fields(prev); len(f) > 0 {
			prev = strings.Join(f[max(0, len(f)-3):], " ") // the words before ": "
		}
		if p := strings.TrimSpace(parts[i]); p != "" && strings.EqualFold(p, prev) {
			return p
		}
	}
	return ""
}

// TestNoDoubledErrorPrefix: the errors commands print never say one
// prefix twice, whatever failed.
func TestNoDoubledErrorPrefix(t *testing.T) {
	b := newBridge(t)
	b.ticket("towels")
	refused := newBridge(t)
	refused.vars["TICKETBRIDGE_API_KEY_FILE"] = writeTemp(t, "rta_not-a-key-of-this-server\n")
	down := newBridge(t)
	down.vars["TICKETBRIDGE_API_URL"] = "http://127.0.0.1:1"
	bad := newBridge(t)
	bad.vars["TICKETBRIDGE_SCHEDULE"] = "every now and then"
	for name, c := range map[string]struct {
		b    *hotelKit
		args []string
	}{
		"key refused": {refused, []string{"once"}},
		"API down":    {down, []string{"once"}},
		"bad config":  {bad, []string{"once"}},
		"check down":  {down, []string{"check"}},
		"no ticket":   {b, []string{"status", "ffffffff"}},
		"bad retry":   {b, []string{"retry", "no-such-entry"}},
	} {
		out, errOut, code := c.b.cmd(c.args[0], c.args[1:]...)
		if code == 0 {
			t.Errorf("%s: exit 0, want a failure\n%s%s", name, out, errOut)
		}
		for _, line := range strings.Split(out+errOut, "\n") {
			if m := doubled(line); m != "" {
				t.Errorf("%s: %q says a prefix twice:\n%s", name, m, line)
			}
		}
	}
}

// writeTemp writes content to a file of its own, mode 0600, and returns
// its path.
func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
