package adapters

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

// Fields is what the platform owns of a request, as the helpdesk keeps a
// copy of it. The platform owns every one of them: the helpdesk's copy is
// kept current from it, and nothing of it goes upstream.
type Fields struct {
	// Department routes the ticket to a queue or group, by the same
	// routing as at creation.
	Department string
	// Title is the request's task_description: the ticket's subject or
	// title.
	Title string
	// Due is the request's target_due_at; zero when none is set.
	Due time.Time
	// Rating is the guest's rating; nil while unrated.
	Rating *float64
	// Comment is the console card's internal comment; "" when none.
	Comment string
	// Origin is set at creation only: it is never in a FieldSet.
	Origin guestapi.Origin
	// Priority is what the engine's priority rule derived; "" leaves the
	// helpdesk's priority alone.
	Priority Priority
}

// Priority is a helpdesk priority in the bridge's terms; each adapter maps
// it to its helpdesk's own. "" means none: the helpdesk's is left alone.
type Priority string

// Priorities, lowest first.
const (
	PriorityLow    Priority = "low"
	PriorityNormal Priority = "normal"
	PriorityHigh   Priority = "high"
	PriorityUrgent Priority = "urgent"
)

// Field names one of the fields of [Fields] that an update can set.
type Field uint8

// The fields an update can set. Origin is set at creation only and has
// none.
const (
	FieldDepartment Field = 1 << iota
	FieldTitle
	FieldDue
	FieldRating
	FieldComment
	FieldPriority
)

// fieldNames are the fields' names, in the order of their bits: the
// order FieldSet.String lists them in.
var fieldNames = [...]string{"department", "title", "due", "rating", "comment", "priority"}

// AllFields is the set of every field an update can set.
const AllFields = FieldSet(FieldDepartment | FieldTitle | FieldDue | FieldRating | FieldComment | FieldPriority)

// String returns the field's name ("department", "due", ...).
func (f Field) String() string {
	for i, n := range fieldNames {
		if f == 1<<i {
			return n
		}
	}
	return "field(" + strconv.Itoa(int(f)) + ")"
}

// FieldSet is a set of fields (a bit mask of [Field]s).
type FieldSet uint8

// Has reports whether f is in s.
func (s FieldSet) Has(f Field) bool { return s&FieldSet(f) != 0 }

// With returns s with f added.
func (s FieldSet) With(f Field) FieldSet { return s | FieldSet(f) }

// Fields returns the fields of s, in a stable order.
func (s FieldSet) Fields() []Field {
	var out []Field
	for i := range fieldNames {
		if s.Has(1 << i) {
			out = append(out, 1<<i)
		}
	}
	return out
}

// String lists the set's field names in a stable order, separated by
// commas ("department,due"); "" for the empty set.
func (s FieldSet) String() string {
	var names []string
	for _, f := range s.Fields() {
		names = append(names, f.String())
	}
	return strings.Join(names, ",")
}

// ParseFieldSet reads a list of field names as String writes it (spaces
// around the names allowed, "" for the empty set).
func ParseFieldSet(s string) (FieldSet, error) {
	var out FieldSet
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	for n := range strings.SplitSeq(s, ",") {
		n = strings.TrimSpace(n)
		i := -1
		for j, name := range fieldNames {
			if name == n {
				i = j
			}
		}
		if i < 0 {
			return 0, fmt.Errorf("unknown field %q (want one of %s)", n, AllFields)
		}
		out = out.With(1 << i)
	}
	return out, nil
}

// Diff returns the fields whose values differ between a and b (Origin
// aside). Times compare as instants, ratings by value.
func Diff(a, b Fields) FieldSet {
	var s FieldSet
	if a.Department != b.Department {
		s = s.With(FieldDepartment)
	}
	if a.Title != b.Title {
		s = s.With(FieldTitle)
	}
	if !a.Due.Equal(b.Due) {
		s = s.With(FieldDue)
	}
	if (a.Rating == nil) != (b.Rating == nil) || (a.Rating != nil && *a.Rating != *b.Rating) {
		s = s.With(FieldRating)
	}
	if a.Comment != b.Comment {
		s = s.With(FieldComment)
	}
	if a.Priority != b.Priority {
		s = s.With(FieldPriority)
	}
	return s
}

// FieldUpdate asks an adapter to make ref's copy of the platform's fields
// current.
type FieldUpdate struct {
	// UpstreamID is the upstream ticket the helpdesk ticket mirrors.
	UpstreamID string
	// Changed are the fields to set; the others are left as they are.
	Changed FieldSet
	// New holds every field's current platform value; the Changed ones
	// are to be set.
	New Fields
	// Old is what the bridge last carried to the helpdesk: zero values
	// when it does not know (a first carry, a lost state). It is for
	// telling what changed (the webhook's previous values, the email
	// helpdesk's follow-up), never for deciding what to write: that is
	// decided by what the ticket holds.
	Old Fields
}

// Updater is implemented by adapters that keep the platform's fields
// current in the helpdesk. It is an optional ability, like [Checker] and
// [Flusher], rather than a method of [Helpdesk]: adapters gain it one at a
// time, an engine keeps working with those that lack it (their tickets
// keep the fields they were created with), and test wrappers of a
// Helpdesk forward it where they wrap one that has it.
//
// Update sets the fields in u.Changed of ticket ref to their values in
// u.New. The contract, checked by the conformance case FieldsUpdate of
// package adaptertest:
//
//   - Idempotent: setting what the ticket already holds writes nothing new
//     (no second note, and no new revision where the helpdesk lets the
//     adapter tell). A repeat after an error completes the work without
//     doubling any of it.
//   - Never echoed: nothing Update writes comes back from Changes, not as a
//     status change, a note or a reply.
//   - A rating or a comment becomes one internal note ([RatingNote],
//     [CommentNote]) written once per distinct value: the note ends with a
//     marker ([MarkerRating], [MarkerComment]) and is not written when
//     the ticket holds that marker already, so that a lost state (u.Old
//     zero) does not write it twice. A rating also goes to a native or
//     custom field, or a tag, where the helpdesk has one.
//   - A department move moves the ticket to the queue or group the
//     department routes to, by the same routing EnsureTicket uses at
//     creation.
//   - Rate budget: when the helpdesk's budget for this ticket is spent
//     (Zendesk allows 30 updates of a ticket in 10 minutes), Update
//     returns a [*WaitError]: the engine keeps the change and tries again
//     at or after its Until, without counting a failure.
//   - Errors follow [Helpdesk]'s contract otherwise: [ErrNotFound] for an
//     unknown ref, [ErrInvalid] for a value the helpdesk refuses for good,
//     anything else temporary. No error holds a credential.
//
// An adapter whose helpdesk cannot hold a field natively says in its doc
// comment where the field goes. An adapter may carry the fields as a note
// (the email helpdesk: a follow-up naming what changed); it declares so to
// the conformance suite (adaptertest.FieldsHarness.AsNote).
type Updater interface {
	Update(ctx context.Context, ref Ref, u FieldUpdate) error
}

// WaitError says that the helpdesk's rate budget for the ticket is spent:
// the update is to be tried again at or after Until. It is neither a
// failure nor [ErrInvalid]; it holds no credential.
type WaitError struct {
	Ref   Ref       // the ticket
	Until time.Time // when the helpdesk allows the next write
	// Why names the budget in the helpdesk's words, e.g. "30 updates of
	// a ticket in 10 minutes"; "" when it did not say.
	Why string
}

func (e *WaitError) Error() string {
	msg := fmt.Sprintf("update of ticket %s waits until %s", e.Ref, e.Until.UTC().Format(time.RFC3339))
	if e.Why != "" {
		msg += ": " + e.Why
	}
	return msg
}

// Marker kinds of the notes Update writes (see [Marker]): their ID is
// [FieldValueID] of the value noted.
const (
	MarkerRating  = "rating"
	MarkerComment = "comment"
)

// FieldValueID identifies a noted value in a marker: the first 16 hex
// digits of its SHA-256, so that the marker holds no text of the value.
func FieldValueID(value string) string {
	sum := sha256.Sum256([]byte(value))
	return hex.EncodeToString(sum[:8])
}

// FormatRating writes a rating as the API gives it: 4, 4.5.
func FormatRating(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }

// RatingNote is the text of the internal note of a guest's rating, and
// the marker that finds it again. The API states no scale, so none is
// written (the reference server's console takes 0 to 10).
func RatingNote(r float64) (text string, m Marker) {
	v := FormatRating(r)
	return "Guest rated " + v + ".", Marker{Kind: MarkerRating, ID: FieldValueID(v)}
}

// CommentNote is the text of the internal note of the console card's
// comment, and the marker that finds it again. An empty comment (one
// removed in the console) has a note of its own.
func CommentNote(c string) (text string, m Marker) {
	m = Marker{Kind: MarkerComment, ID: FieldValueID(c)}
	if strings.TrimSpace(c) == "" {
		return "Console comment removed.", m
	}
	return "Console comment:\n\n" + c, m
}
