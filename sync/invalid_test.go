package sync_test

import (
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters/memory"
)

// TestInvalidInputBacksOffTheLongest checks the adapter contract: an error
// wrapping adapters.ErrInvalid (the helpdesk refuses the input itself) is
// not retried quickly; the ticket waits QuietMax, while a temporary
// failure waits one interval.
func TestInvalidInputBacksOffTheLongest(t *testing.T) {
	e := newEnv(t)
	e.cfg.Concurrency = 1 // a known order: by ticket id
	ids := []string{e.newTicket("t1"), e.newTicket("t2")}
	sortStrings(ids)
	invalid, temporary := ids[0], ids[1]
	e.backend.Inject(memory.Fault{Op: memory.OpAppend, Nth: 1, Permanent: true})
	e.backend.Inject(memory.Fault{Op: memory.OpAppend, Nth: 1})
	now := e.clock.Now()
	if r := e.cycle(); r.Errors != 2 {
		t.Fatalf("report: %s", r)
	}
	if tk := ticketState(t, e.store, invalid); !tk.NextDue.Equal(now.Add(e.cfg.QuietMax)) {
		t.Errorf("after ErrInvalid the ticket is due at %s, want QuietMax (%s) after %s", tk.NextDue, e.cfg.QuietMax, now)
	}
	tk := ticketState(t, e.store, temporary)
	if !tk.NextDue.After(now) || !tk.NextDue.Before(now.Add(e.cfg.QuietMax)) {
		t.Errorf("after a temporary failure the ticket is due at %s, want within QuietMax after %s", tk.NextDue, now)
	}
}
