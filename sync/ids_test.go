package sync

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
)

// TestValidIDMatchesState: validID accepts exactly the ids state stores, so
// an id it lets through never fails a whole transaction.
func TestValidIDMatchesState(t *testing.T) {
	st, err := state.Open(filepath.Join(t.TempDir(), "state.db"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ids := []string{
		"0f8fad5b-d9cb-469f-a165-70867728950e", "a b", "x\u0085y", "x\u2028y", "x\u200by",
		"\xff", "a\xc3", "a/b", "a\x00", "a\tb", "a\x7f", "a\u009fb", "",
		strings.Repeat("a", 200), strings.Repeat("a", 201), strings.Repeat("é", 100), strings.Repeat("é", 101),
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, id := range ids {
		err := st.Update(func(tx *state.Tx) error {
			if err := tx.PutTicket(state.Ticket{ID: id, NextDue: now}); err != nil {
				return err
			}
			return tx.PutMirrored("0f8fad5b-d9cb-469f-a165-70867728950e", id, "hd-1", now)
		})
		if stored := err == nil; stored != validID(id) {
			t.Errorf("id %q: validID %v, state stores it: %v (%v)", id, validID(id), stored, err)
		}
	}
}
