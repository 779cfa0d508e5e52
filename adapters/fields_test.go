package adapters

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestFieldSetStringAndParse(t *testing.T) {
	s := FieldSet(0).With(FieldDue).With(FieldDepartment)
	if got := s.String(); got != "department,due" {
		t.Errorf("String() = %q, want department,due", got)
	}
	for _, set := range []FieldSet{0, s, AllFields, FieldSet(FieldPriority)} {
		back, err := ParseFieldSet(set.String())
		if err != nil || back != set {
			t.Errorf("ParseFieldSet(%q) = %v, %v; want %v", set.String(), back, err, set)
		}
	}
	if _, err := ParseFieldSet("due, colour"); err == nil {
		t.Error("ParseFieldSet accepted an unknown field")
	}
	if !s.Has(FieldDue) || s.Has(FieldTitle) {
		t.Errorf("Has is wrong for %v", s)
	}
}

func TestDiff(t *testing.T) {
	four, four2, five := 4.0, 4.0, 5.0
	due := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	a := Fields{Department: "hk", Title: "Towels", Due: due, Rating: &four, Comment: "c", Priority: PriorityHigh}
	b := a
	b.Rating, b.Due = &four2, due.In(time.FixedZone("CEST", 7200))
	if d := Diff(a, b); d != 0 {
		t.Errorf("Diff of equal fields = %v", d)
	}
	b.Rating, b.Department, b.Comment = &five, "fo", ""
	if d := Diff(a, b); d.String() != "department,rating,comment" {
		t.Errorf("Diff = %v", d)
	}
	if d := Diff(a, Fields{}); d != AllFields {
		t.Errorf("Diff with zero = %v, want all", d)
	}
}

func TestWaitErrorAs(t *testing.T) {
	until := time.Date(2026, 5, 1, 12, 10, 0, 0, time.UTC)
	err := fmt.Errorf("update: %w", &WaitError{Ref: "7", Until: until, Why: "30 updates of a ticket in 10 minutes"})
	var w *WaitError
	if !errors.As(err, &w) || !w.Until.Equal(until) {
		t.Fatalf("errors.As(%v) found no WaitError", err)
	}
	if errors.Is(err, ErrInvalid) {
		t.Error("a WaitError is ErrInvalid")
	}
}

func TestFieldNotesMarkers(t *testing.T) {
	text, m := RatingNote(4.5)
	if text != "Guest rated 4.5." || m.Kind != MarkerRating {
		t.Errorf("RatingNote = %q, %+v", text, m)
	}
	back, ok := ParseMarker(text + "\n\n" + m.Line())
	if !ok || back != m {
		t.Errorf("ParseMarker of the rating note = %+v, %v; want %+v", back, ok, m)
	}
	_, c1 := CommentNote("Guest is VIP")
	_, c2 := CommentNote("Guest is VIP ")
	if c1 == c2 || c1.Kind != MarkerComment || !MarkerToken(c1.ID) {
		t.Errorf("comment markers %+v and %+v", c1, c2)
	}
	if got, _ := CommentNote(""); got != "Console comment removed." {
		t.Errorf("note of an empty comment = %q", got)
	}
}
