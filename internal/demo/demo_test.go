package demo

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
)

// TestScript plays the script in a new folder and checks what each step
// shows, and that a second demo into the folder is refused.
func TestScript(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	var out, logs bytes.Buffer
	d, err := Start(context.Background(), Options{Dir: dir, Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})), Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Script(context.Background()); err != nil {
		d.Close()
		t.Fatalf("script: %v\n%s", err, out.String())
	}
	d.Close()
	for _, want := range []string{
		"cycle: 4 helpdesk tickets created",
		"Maria (front desk): Towels and a second pillow are on their way to 214!",
		"visible_to_guest false",
		"thread.md now says: Status: assigned",
		"thread.md now says: Department: housekeeping, Due: 20",
		"no writes upstream, none in the helpdesk.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the script's output lacks %q:\n%s", want, out.String())
		}
	}
	if d.Dir() != dir {
		t.Errorf("Dir() = %s, want %s", d.Dir(), dir)
	}
	if logs.Len() != 0 {
		t.Errorf("the demo logged warnings:\n%s", logs.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "state.db")); err != nil {
		t.Errorf("the state file: %v", err)
	}
	if _, err := Start(context.Background(), Options{Dir: dir, Log: slog.New(slog.DiscardHandler), Out: &out}); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("a demo into a used folder: %v, want ErrNotEmpty", err)
	}
}

// TestGuestCurlWorks sends the request the demo prints to write as a
// guest, as curl would, and wants it accepted.
func TestGuestCurlWorks(t *testing.T) {
	ts := refservertest.New(t)
	tv, err := ts.Server.CreateTicket(ts.Org, refserver.NewTicket{Department: "housekeeping", TaskDescription: "towels"})
	if err != nil {
		t.Fatal(err)
	}
	line := GuestCurl(ts.ConsoleToken, ts.URL, tv.ID)
	var headers [][2]string
	for _, m := range regexp.MustCompile(`-H '([^:]+): ([^']*)'`).FindAllStringSubmatch(line, -1) {
		headers = append(headers, [2]string{m[1], m[2]})
	}
	data := regexp.MustCompile(`-d '([^']*)'`).FindStringSubmatch(line)
	url := line[strings.LastIndex(line, " ")+1:]
	if data == nil || !strings.HasPrefix(url, "http://") {
		t.Fatalf("cannot read the example: %s", line)
	}
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(data[1]))
	if err != nil {
		t.Fatal(err)
	}
	// curl -d sends this unless a header says otherwise.
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, h := range headers {
		req.Header.Set(h[0], h[1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("the demo's curl example gets %d:\n%s", resp.StatusCode, line)
	}
	v, err := ts.Server.Ticket(tv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Messages) != 1 || v.Messages[0].AuthorType != guestapi.AuthorGuest {
		t.Errorf("after the example the ticket has %+v, want one guest message", v.Messages)
	}
}
