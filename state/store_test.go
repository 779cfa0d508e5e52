package state

import (
	"path/filepath"
	"testing"
	"time"
)

// testClock is a fake clock: each call returns the same instant until moved.
type testClock struct{ t time.Time }

func (c *testClock) now() time.Time { return c.t }

func openTest(t *testing.T, opts Options) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	if opts.Now == nil {
		clk := &testClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		opts.Now = clk.now
	}
	if opts.LockTimeout == 0 {
		opts.LockTimeout = 20 * time.Millisecond
	}
	s, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, path
}

func TestTicketRoundTripSmoke(t *testing.T) {
	s, _ := openTest(t, Options{})
	want := Ticket{ID: "t1", Department: "hk", Ref: "42", UpstreamStatus: "new"}
	if err := s.Update(func(tx *Tx) error { return tx.PutTicket(want) }); err != nil {
		t.Fatal(err)
	}
	var got Ticket
	var ok bool
	if err := s.View(func(tx *Tx) (err error) { got, ok, err = tx.Ticket("t1"); return err }); err != nil {
		t.Fatal(err)
	}
	if !ok || got.Ref != "42" || got.CreatedAt.IsZero() {
		t.Fatalf("got %+v ok=%t", got, ok)
	}
}
