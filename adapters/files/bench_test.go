package files_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// BenchmarkAppend measures mirroring one new message: a ticket.json and a
// thread.md rewrite, each fsynced with its directory.
func BenchmarkAppend(b *testing.B) {
	a := open(b, b.TempDir())
	defer a.Close()
	ref, err := a.EnsureTicket(b.Context(), adapters.Ticket{UpstreamID: "bench", Department: "spa", Status: guestapi.StatusNew, CreatedAt: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		m := adapters.Message{UpstreamID: fmt.Sprint("m", i), AuthorType: guestapi.AuthorGuest, AuthorName: "Ada", Body: "Hello again", Public: true}
		if _, err := a.Append(b.Context(), ref, []adapters.Message{m}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChangesIdle measures one poll of an empty outbox with 1000
// processed files behind the cursor: the cost every cycle pays.
func BenchmarkChangesIdle(b *testing.B) {
	dir := b.TempDir()
	a := open(b, dir)
	defer a.Close()
	if _, err := a.EnsureTicket(b.Context(), adapters.Ticket{UpstreamID: "bench", Department: "spa"}); err != nil {
		b.Fatal(err)
	}
	processed := filepath.Join(dir, "outbox", "processed")
	for i := 1; i <= 1000; i++ {
		name := fmt.Sprintf("%012d-r.txt", i)
		if err := os.WriteFile(filepath.Join(processed, name), []byte("ticket: bench\nkind: note\n\nx"), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	_, cur, err := a.Changes(b.Context(), "")
	for err == nil && cur != "1000" {
		_, cur, err = a.Changes(b.Context(), cur)
	}
	if err != nil {
		b.Fatal(err)
	}
	// As processed/ is between two replies: its time is not recent, so a
	// quiet poll answers without listing it (see TestQuietChangesListNothing).
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(processed, old, old); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := a.Changes(b.Context(), cur); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLookupAfterStateLoss measures the first Lookup of a fresh
// adapter on a folder of 1000 tickets: a scan of every ticket.json.
func BenchmarkLookupAfterStateLoss(b *testing.B) {
	dir := b.TempDir()
	a := open(b, dir)
	for i := range 1000 {
		if _, err := a.EnsureTicket(b.Context(), adapters.Ticket{UpstreamID: fmt.Sprint("t", i), Department: "spa"}); err != nil {
			b.Fatal(err)
		}
	}
	a.Close()
	for b.Loop() {
		fresh := open(b, dir)
		if _, ok, err := fresh.Lookup(b.Context(), "t999"); err != nil || !ok {
			b.Fatal(ok, err)
		}
		fresh.Close()
	}
}
