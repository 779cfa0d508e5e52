package statuspage

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/state"
)

// TestClientActsAndReadsTrail: the console's client acts on a hotel of a
// daemon of many, at that hotel's pages only, as the operator it names,
// and reads the request's trail, which records the action; a wrong token
// is the daemon's refusal with its reason.
func TestClientActsAndReadsTrail(t *testing.T) {
	p := newFleetPage(t, testToken)
	first := "00000000-0000-4000-8000-000000000000"
	c := NewClient(":9464", testToken, "alpha")
	c.HTTP = &http.Client{Transport: p.tr}
	answer, err := c.Act(t.Context(), "retry", "ev-refused", "", "ines")
	if err != nil {
		t.Fatal(err)
	}
	if want := "retry: entry ev-refused of ticket " + first + ". The entry is pending again"; !strings.HasPrefix(answer, want) {
		t.Errorf("answer %q, want it to start with %q", answer, want)
	}
	if e := entryOf(t, p.alpha, "ev-refused"); e.State != state.Pending {
		t.Errorf("alpha's entry after retry: %+v", e)
	}
	if e := entryOf(t, p.beta, "ev-refused"); e.State != state.Failed {
		t.Errorf("beta's entry changed by an action on alpha: %+v", e)
	}
	trail, err := c.Trail(t.Context(), first)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(trail); n == 0 || trail[n-1].Kind != "retry" || trail[n-1].Operator != "cli:ines" {
		t.Errorf("trail after retry: %+v", trail)
	}

	bad := NewClient("[::]:9464", "not-the-token", "alpha")
	bad.HTTP = c.HTTP
	if _, err := bad.Act(t.Context(), "skip", "ev-pending", "by phone", "ines"); err == nil ||
		err.Error() != "the daemon refused (403 Forbidden): Refused: the console token is wrong." {
		t.Errorf("act with a wrong token: %v", err)
	}
	if _, err := c.Act(t.Context(), "delete", "ev-pending", "", "ines"); err == nil {
		t.Error("an action the console has not was asked")
	}
}

// TestNewClientAsksWildcardsOnLoopback: a listener on every address is
// asked on loopback, of its family.
func TestNewClientAsksWildcardsOnLoopback(t *testing.T) {
	for listen, want := range map[string]string{":9464": "127.0.0.1:9464", "0.0.0.0:9464": "127.0.0.1:9464",
		"[::]:9464": "[::1]:9464", "192.0.2.7:9464": "192.0.2.7:9464"} {
		if got := NewClient(listen, "", "").addr; got != want {
			t.Errorf("NewClient(%q) asks %s, want %s", listen, got, want)
		}
	}
}

// TestClientEscapesOnce: an id the path must escape reaches the console
// as written, once escaped: the daemon's answer names it as the operator
// gave it.
func TestClientEscapesOnce(t *testing.T) {
	p := newTestPage(t, testToken)
	c := NewClient(":9464", testToken, "")
	c.HTTP = &http.Client{Transport: p.tr}
	for _, id := range []string{"RT #12", "a/b?c", "50%"} {
		_, err := c.Trail(t.Context(), id)
		if want := fmt.Sprintf("no tracked ticket has the id or helpdesk reference %q", id); err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("Trail(%q): %v, want the daemon to name the id as given", id, err)
		}
	}
}
