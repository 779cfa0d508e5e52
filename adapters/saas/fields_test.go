package saas_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/saas"
)

// A budget of 2 writes a minute refuses the third with the end of the
// first's window, per ticket, and a Block holds writes until its end.
func TestBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := saas.Budget{N: 2, Window: time.Minute, Why: "two a minute"}
		start := time.Now()
		for range 2 {
			if err := b.Take(1, "1"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Second)
		}
		var w *adapters.WaitError
		if err := b.Take(1, "1"); !errors.As(err, &w) || !w.Until.Equal(start.Add(time.Minute)) || w.Why != "two a minute" {
			t.Fatalf("third write: %v, want a WaitError until %v", err, start.Add(time.Minute))
		}
		if err := b.Take(2, "2"); err != nil {
			t.Fatalf("another ticket's write: %v", err)
		}
		time.Sleep(time.Until(w.Until))
		if err := b.Take(1, "1"); err != nil {
			t.Fatalf("write after the wait: %v", err)
		}
		b.Block(2, time.Now().Add(30*time.Second))
		if err := b.Take(2, "2"); !errors.As(err, &w) {
			t.Fatalf("write of a blocked ticket: %v", err)
		}
	})
}

// Differ compares only the fields asked for; a department move compares
// the title too (it holds the department); no priority leaves it alone.
func TestDiffer(t *testing.T) {
	held := saas.Values{Group: "1", Title: "[a] x", Priority: "low"}
	want := saas.Values{Group: "2", Title: "[b] x", Due: "2026-01-01"}
	got := saas.Differ(held, want, adapters.FieldSet(adapters.FieldDepartment|adapters.FieldPriority))
	if got != adapters.FieldSet(adapters.FieldDepartment|adapters.FieldTitle) {
		t.Errorf("Differ = %v, want department,title", got)
	}
	if got := saas.Differ(held, held, adapters.AllFields); got != 0 {
		t.Errorf("Differ of equal values = %v", got)
	}
}
