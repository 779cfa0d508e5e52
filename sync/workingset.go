package sync

import (
	"errors"
	"slices"
	"strings"

	"github.com/ticketbridge/ticketbridge/state"
)

// workingSet is what a cycle reads of state at its start, in one read
// (state.Store.ViewWorkingSet: one round trip on PostgreSQL): the tickets,
// the helpdesk's cursor, and the pending and unmarked journal entries.
// Discover reads it; collect, refresh and send take what they need from it
// instead of reading state again while the store has committed nothing
// since (see [cycle.fresh]), which is the whole of a quiet cycle.
type workingSet struct {
	commits  int64          // the store's commits before the read
	tickets  []state.Ticket // in id order; unreadable records left out
	cursor   string
	cursorOK bool          // the cursor was read: a corrupt one is left to collect to report
	pending  []state.Entry // unreadable entries left out
	unmarked []state.Entry // unreadable entries left out
}

// read fills in the cursor of the helpdesk named hd and the journal
// entries; the tickets are read by discover, which logs what it cannot
// read. Unreadable entries are left out, as the phases leave them out.
func (ws *workingSet) read(tx *state.Tx, hd string) error {
	var err error
	ws.cursor, err = tx.Cursor(hd)
	ws.cursorOK = err == nil
	if ws.pending, err = tx.PendingJournal(); err != nil && !errors.Is(err, state.ErrCorrupt) {
		return err
	}
	if ws.unmarked, err = tx.UnmarkedJournal(); err != nil && !errors.Is(err, state.ErrCorrupt) {
		return err
	}
	return nil
}

// fresh returns the working set when the store has committed nothing
// since it was read: what it holds is then what state holds.
func (c *cycle) fresh() (*workingSet, bool) {
	if c.ws == nil || c.e.st.Commits() != c.ws.commits {
		return nil, false
	}
	return c.ws, true
}

// ticket returns the ticket id of the working set, in the form of
// state.Tx.Ticket, which it stands in for.
func (ws *workingSet) ticket(id string) (state.Ticket, bool, error) {
	t, ok := findTicket(ws.tickets, id)
	return t, ok, nil
}

// findTicket returns the ticket id of ts, tickets in id order (a working
// set's), by a binary search.
func findTicket(ts []state.Ticket, id string) (state.Ticket, bool) {
	i, ok := slices.BinarySearchFunc(ts, id, func(t state.Ticket, id string) int { return strings.Compare(t.ID, id) })
	if !ok {
		return state.Ticket{}, false
	}
	return ts[i], true
}
