package sync

import (
	"bytes"
	"context"
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/memory"
	"github.com/ticketbridge/ticketbridge/state"
)

// TestValidIDMatchesState: validID accepts exactly the ids state stores, so
// an id it lets through never fails a whole transaction.
func TestValidIDMatchesState(t *testing.T) {
	st, err := state.Open(t.Context(), filepath.Join(t.TempDir(), "state.db"), state.Options{})
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
		err := st.Update(t.Context(), func(tx *state.Tx) error {
			if err := tx.PutTicket(state.Ticket{ID: id, NextDue: now}); err != nil {
				return err
			}
			return tx.PutMirrored("0f8fad5b-d9cb-469f-a165-70867728950e", id, "hd-1", now, state.MessageInfo{})
		})
		if stored := err == nil; stored != validID(id) {
			t.Errorf("id %q: validID %v, state stores it: %v (%v)", id, validID(id), stored, err)
		}
	}
}

// commits returns the store's transaction id: it grows by one per commit.
func commits(t *testing.T, st *state.Store) uint64 {
	t.Helper()
	var b bytes.Buffer
	if _, err := st.Backup(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	return binary.LittleEndian.Uint64(b.Bytes()[64:]) // page header, then the meta's txid
}

type noAPI struct{ API }

// TestStoreSentNothingCommitsNothing: when every pending entry waits, the
// send phase commits nothing.
func TestStoreSentNothingCommitsNothing(t *testing.T) {
	st, err := state.Open(t.Context(), filepath.Join(t.TempDir(), "state.db"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := New(DefaultConfig(), Deps{API: noAPI{}, Helpdesk: memory.New(memory.NewBackend(), memory.Options{}), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	c := e.newCycle(context.Background())
	defer c.cancel(nil)
	before := commits(t, st)
	if err := st.Update(t.Context(), func(*state.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if commits(t, st) != before+1 {
		t.Fatal("the commit count does not count commits")
	}
	c.storeSent([][]sendOutcome{{}, {}})
	if got := commits(t, st); got != before+1 || c.fatal != nil {
		t.Fatalf("%d commits for nothing to store (%v)", got-before-1, c.fatal)
	}
}
