package sync_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/state"
	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// TestTicketDetailCarried: a request's detail gives the fields last
// carried, names those whose update's outcome is unknown, and its JSON
// (status ID --json) leaves the request's texts out, as it does the
// messages' words; a request never carried has none.
func TestTicketDetailCarried(t *testing.T) {
	at := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	st, err := state.Open(t.Context(), filepath.Join(t.TempDir(), "state.db"), state.Options{Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const carried, never = "00000001-0000-4000-8000-000000000001", "00000002-0000-4000-8000-000000000002"
	err = st.Update(t.Context(), func(tx *state.Tx) error {
		if err := tx.PutTicket(state.Ticket{ID: carried, Ref: "7", Carried: state.Fields{At: at, Department: "spa", Title: "Late check-out please",
			Due: at.Add(time.Hour), Rated: true, Rating: 4.5, Comment: "VIP guest", Priority: "high", Unsure: uint8(adapters.FieldDue | adapters.FieldComment)}}); err != nil {
			return err
		}
		return tx.PutTicket(state.Ticket{ID: never, Ref: "8"})
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := tbsync.ReadTicket(t.Context(), st, carried)
	if err != nil {
		t.Fatal(err)
	}
	c := d.Carried
	if c == nil || c.Department != "spa" || c.Title != "Late check-out please" || !c.Due.Equal(at.Add(time.Hour)) || !c.Rated || c.Rating != 4.5 ||
		c.Comment != "VIP guest" || c.Priority != "high" || !c.At.Equal(at) {
		t.Fatalf("carried %+v", c)
	}
	if !slices.Equal(c.Unsure, []string{"due", "comment"}) || !c.IsUnsure("due") || c.IsUnsure("department") {
		t.Errorf("unsure %v", c.Unsure)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if js := string(b); !strings.Contains(js, `"department":"spa"`) || !strings.Contains(js, `"unsure":["due","comment"]`) ||
		strings.Contains(js, "Late check-out") || strings.Contains(js, "VIP guest") {
		t.Errorf("JSON of the detail:\n%s", js)
	}
	if d, err := tbsync.ReadTicket(t.Context(), st, never); err != nil || d.Carried != nil {
		t.Errorf("a request never carried: %+v, %v", d.Carried, err)
	}
}
