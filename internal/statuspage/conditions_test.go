package statuspage

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/notify"
)

// TestOverviewListsOpenConditions: the notifications' open conditions of
// the hotel are listed on the overview as the notifier holds them, with
// what happened, since when and how many notices went out; a resolved one
// is gone at the next view, and so is the section.
func TestOverviewListsOpenConditions(t *testing.T) { atT0(t, testOverviewListsOpenConditions) }

func testOverviewListsOpenConditions(t *testing.T) {
	st := fixture(t, 1)
	var open []notify.Episode
	h := NewHotel("", st).WithConditions(func() []notify.Episode { return open })
	s, err := New(Options{Hotels: only(h), One: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if body := getOK(t, s, "/"); strings.Contains(body, "Open conditions") {
		t.Fatal("the section shows with no condition")
	}
	ep := notify.Episode{Key: notify.Key{Hotel: "default", Kind: notify.KeyRefused}, Version: 1, Since: t0.Add(-time.Hour),
		Cause: "the API refused the key (401)", Fired: true, Count: 2, LastAt: t0}
	open = []notify.Episode{ep}
	body := getOK(t, s, "/")
	for _, want := range []string{"Open conditions (1)", "api-key-refused", "the API refused the key (401)", "<td>2</td>"} {
		if !strings.Contains(body, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}
	open = nil
	if body := getOK(t, s, "/"); strings.Contains(body, "Open conditions") {
		t.Error("the section stays once the condition is resolved")
	}
}

// TestOverviewReadsNoNoticesFromState: a page view reads no notification
// episode from the state. With the notifications off there are none to
// show, and a state that does not answer (a database down) must not hold
// the page; with them on, the notifier's memory is what is shown.
func TestOverviewReadsNoNoticesFromState(t *testing.T) { atT0(t, testOverviewReadsNoNoticesFromState) }

func testOverviewReadsNoNoticesFromState(t *testing.T) {
	st := fixture(t, 1)
	ep := notify.Episode{Key: notify.Key{Hotel: "default", Kind: notify.KeyRefused}, Version: 1, Since: t0.Add(-time.Hour),
		Cause: "the API refused the key (401)", Fired: true, Count: 1, LastAt: t0}
	if ok, err := st.Notices().Put(t.Context(), ep, 0); !ok || err != nil {
		t.Fatalf("Put: %t, %v", ok, err)
	}
	h := NewHotel("", st)
	if got := h.Snapshot().Conditions; len(got) != 0 {
		t.Errorf("with the notifications off the snapshot read %d conditions from the state, want none read", len(got))
	}
}
