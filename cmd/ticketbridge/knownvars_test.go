package main

import (
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/internal/check"
)

// TestMisspelledVariableWarned: TICKETBRIDGE_ADAPTOR=rt is named with the
// variable meant, check fails on it, and the commands that read the
// configuration warn.
func TestMisspelledVariableWarned(t *testing.T) {
	h := newHotel(t)
	delete(h.vars, "TICKETBRIDGE_ADAPTER")
	h.vars["TICKETBRIDGE_ADAPTOR"] = "rt"
	out, code, v := h.check()
	if code != 1 || v["configuration"] != check.Fail ||
		!strings.Contains(out, "TICKETBRIDGE_ADAPTOR (in ") || !strings.Contains(out, "ticketbridge.env) is not a ticketbridge variable and is ignored; did you mean TICKETBRIDGE_ADAPTER?") {
		t.Fatalf("check with a misspelled variable: exit %d, configuration %q:\n%s", code, v["configuration"], out)
	}

	b := newBridge(t)
	b.ticket("towels")
	b.vars["TICKETBRIDGE_SCHEDUEL"] = "@every 1m"
	b.vars["TICKETBRIDGE_WHATEVER_THIS_IS"] = "1"
	_, errOut, code := b.cmd("once")
	if code != 0 || !strings.Contains(errOut, "did you mean TICKETBRIDGE_SCHEDULE?") ||
		!strings.Contains(errOut, "TICKETBRIDGE_WHATEVER_THIS_IS (in") || !strings.Contains(errOut, "config.example.env lists every variable") {
		t.Fatalf("once with misspelled variables: exit %d\n%s", code, errOut)
	}
	for _, cmd := range [][]string{{"status"}, {"state", "backup", b.dir + "/copy.db"}} {
		_, errOut, code := b.cmd(cmd[0], cmd[1:]...)
		if code != 0 || !strings.Contains(errOut, "warning: TICKETBRIDGE_SCHEDUEL") {
			t.Errorf("%v with a misspelled variable: exit %d\n%s", cmd, code, errOut)
		}
	}
}
