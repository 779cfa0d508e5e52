package webhook_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/adapters/webhook/receiver"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

// receiverProcess is cmd/webhook-receiver running as a process of its own.
type receiverProcess struct {
	url    string // http://127.0.0.1:PORT/
	record string // its JSON lines of accepted deliveries
	stderr *testutil.Buffer
}

// buildReceiver compiles cmd/webhook-receiver into a temporary directory.
func buildReceiver(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the end-to-end test builds the receiver and needs the go command: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "webhook-receiver")
	cmd := exec.CommandContext(t.Context(), goBin, "build", "-o", bin, "./cmd/webhook-receiver")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the receiver: %v\n%s", err, out)
	}
	return bin
}

// startReceiver runs the receiver on a free loopback port, replying to
// replyURL, and stops it (checking that it exits cleanly) when the test
// ends.
func startReceiver(t *testing.T, bin, replyURL string) *receiverProcess {
	t.Helper()
	p := &receiverProcess{record: filepath.Join(t.TempDir(), "deliveries.jsonl"), stderr: &testutil.Buffer{}}
	// The tests' clocks and messages may lie before the process started.
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-reply-url", replyURL, "-reply-to-past", "-record", p.record, "-log-level", "debug")
	cmd.Env = append(os.Environ(), "TICKETBRIDGE_WEBHOOK_SECRET="+testSecret)
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// One goroutine reads stdout: the first line, then the rest until the
	// process ends, and only then waits for it, as os/exec requires.
	done := make(chan error, 1)
	lines := make(chan string, 1)
	go func() {
		br := bufio.NewReader(stdout)
		line, _ := br.ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, br)
		done <- cmd.Wait()
	}()
	select {
	case line := <-lines:
		u, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
		if !ok {
			_ = cmd.Process.Kill()
			t.Fatalf("the receiver said %q, want its address; stderr:\n%s", line, p.stderr)
		}
		p.url = u
	case <-time.After(time.Minute): // a process of the built receiver: a hang's report, not a timing
		_ = cmd.Process.Kill()
		t.Fatalf("the receiver did not start; stderr:\n%s", p.stderr)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the receiver exited with %v; stderr:\n%s", err, p.stderr)
			}
		case <-time.After(time.Minute): // a process of the built receiver: a hang's report, not a timing
			_ = cmd.Process.Kill()
			t.Errorf("the receiver did not stop on SIGINT")
		}
	})
	return p
}

// recorded reads the receiver's record of accepted deliveries.
func (p *receiverProcess) recorded(t *testing.T) []receiver.Delivery {
	t.Helper()
	b, err := os.ReadFile(p.record)
	if err != nil {
		t.Fatal(err)
	}
	var out []receiver.Delivery
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var d receiver.Delivery
		if err := json.Unmarshal(line, &d); err != nil {
			t.Fatalf("record line %q: %v", line, err)
		}
		out = append(out, d)
	}
	return out
}

// send posts body to the receiver process as a delivery, signed under key
// at at, and returns the status and the answer.
func (p *receiverProcess) send(t *testing.T, key string, at time.Time, id, event string, signed, sent []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, p.url+"hooks", bytes.NewReader(sent))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhook.HeaderDelivery, id)
	req.Header.Set(webhook.HeaderEvent, event)
	webhook.SetSignature(req.Header, key, at, signed)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestEndToEndWithReceiverProcess runs the adapter against the receiver
// as a separate process: signed deliveries, refusal of tampered, forged
// and replayed ones, and the receiver's replies back into Changes.
func TestEndToEndWithReceiverProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a separate process")
	}
	ctx := t.Context()
	bin := buildReceiver(t)
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := startReceiver(t, bin, "http://"+ln.Addr().String()+webhook.InboundPath)
	logs := &testutil.Buffer{}
	a, err := webhook.New(ctx, webhook.Config{URL: p.url + "hooks", Secret: testSecret, Dir: t.TempDir()}, webhook.Options{Listener: ln, Logger: debugLogger(logs)})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	if err := a.Check(ctx); err != nil {
		t.Fatalf("Check against the receiver: %v", err)
	}
	ref, err := a.EnsureTicket(ctx, upTicket("e2e-1"))
	if err != nil {
		t.Fatal(err)
	}
	guest := guestMsg("m-guest", "Two more towels, please.")
	note := adapters.Message{UpstreamID: "m-note", AuthorType: guestapi.AuthorStaff, AuthorName: "Night manager", Body: "Room 214 is a VIP.", CreatedAt: time.Now()}
	app, err := a.Append(ctx, ref, []adapters.Message{guest, note})
	if err != nil {
		t.Fatal(err)
	}

	// The receiver answered the guest's message (and only it) with a
	// signed reply, stored before the delivery was acknowledged.
	evs, cursor, err := a.Changes(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Fatalf("Changes after a guest message and a note = %+v; want one reply", evs)
	}
	if ev := evs[0]; ev.ID != "reply-"+app[0].HelpdeskID || ev.Kind != adapters.EventReply || ev.Ref != ref || ev.Body != receiver.DefaultReplyText || ev.AuthorName != receiver.DefaultReplyAuthor {
		t.Errorf("reply event %+v", ev)
	}

	if again, err := a.Append(ctx, ref, []adapters.Message{guest, note}); err != nil || !again[0].Existed || !again[1].Existed {
		t.Fatalf("Append again = %+v, %v; want both existing", again, err)
	}
	if err := a.SetStatus(ctx, ref, guestapi.StatusInProgress); err != nil {
		t.Fatal(err)
	}

	got := p.recorded(t)
	var events []string
	ids := map[string]bool{}
	for _, d := range got {
		events = append(events, d.Event)
		ids[d.ID] = true
	}
	if want := "ping ticket.created message.added message.added status.changed"; strings.Join(events, " ") != want {
		t.Fatalf("the receiver recorded %q, want %q", strings.Join(events, " "), want)
	}
	if len(ids) != len(got) {
		t.Errorf("delivery ids repeat: %v", ids)
	}
	original := got[2]
	if original.ID != app[0].HelpdeskID || original.Reply != evs[0].ID {
		t.Errorf("the guest message's delivery %+v; want id %s and reply %s", original, app[0].HelpdeskID, evs[0].ID)
	}

	// What the test sends itself: a tampered body, a forged signature, an
	// old delivery replayed as it was, and the same delivery signed anew.
	now := time.Now()
	tampered := bytes.Replace(original.Body, []byte("towels"), []byte("champagne bottles"), 1)
	if bytes.Equal(tampered, original.Body) {
		t.Fatal("the tampering changed nothing")
	}
	checks := []struct {
		name    string
		key     string
		at      time.Time
		sent    []byte
		status  int
		summary string
	}{
		{"tampered body", testSecret, now, tampered, 401, "signature"},
		{"forged signature", "an-attackers-guess-0123456789", now, original.Body, 401, "signature"},
		{"replayed old delivery", testSecret, now.Add(-10 * time.Minute), original.Body, 401, "tolerance"},
		{"repeated delivery", testSecret, now, original.Body, 200, "duplicate"},
	}
	for _, c := range checks {
		signed := original.Body
		status, answer := p.send(t, c.key, c.at, original.ID, original.Event, signed, c.sent)
		if status != c.status || !strings.Contains(answer, c.summary) {
			t.Errorf("%s: %d %s; want %d mentioning %q", c.name, status, answer, c.status, c.summary)
		}
	}
	if n := len(p.recorded(t)); n != len(got) {
		t.Errorf("the receiver recorded %d deliveries after the refused and repeated ones, want still %d", n, len(got))
	}
	if more, _, err := a.Changes(ctx, cursor); err != nil || len(more) != 0 {
		t.Errorf("Changes after the repeated delivery = %+v, %v; want no second reply", more, err)
	}

	// An adapter with another secret is refused, and Check says so.
	wrong, err := webhook.New(ctx, webhook.Config{URL: p.url + "hooks", Secret: "not-the-shared-secret-0000000000000000", Dir: t.TempDir(), Listen: webhook.ListenOff}, webhook.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Close()
	if err := wrong.Check(ctx); !errors.Is(err, adapters.ErrAuth) {
		t.Errorf("Check with the wrong secret: %v, want ErrAuth", err)
	}
	if !strings.Contains(p.stderr.String(), "delivery refused") {
		t.Errorf("the receiver did not log its refusals:\n%s", p.stderr)
	}
	if strings.Contains(p.stderr.String(), testSecret) || strings.Contains(logs.String(), testSecret) {
		t.Error("a log holds the secret")
	}
}
