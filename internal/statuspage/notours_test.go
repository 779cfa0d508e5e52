package statuspage

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/state"
)

// TestOverviewCountsNotSynced: the overview counts the requests deleted
// on the platform and the helpdesk tickets of another hotel, next to the
// failing ones, and says nothing of them while there are none.
func TestOverviewCountsNotSynced(t *testing.T) { atT0(t, testOverviewCountsNotSynced) }

func testOverviewCountsNotSynced(t *testing.T) {
	st := fixture(t, 3)
	h := NewHotel("", st)
	s, err := New(Options{Hotels: only(h), One: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if page := getOK(t, s, "/"); strings.Contains(page, "Not synced") {
		t.Error("the overview says what is not synced when nothing is")
	}
	if err := st.Update(t.Context(), func(tx *state.Tx) error {
		if err := tx.PutNotOurs(state.NotOurs{ID: "b1", Ref: "RT#4", At: t0}); err != nil {
			return err
		}
		return tx.PutTicket(state.Ticket{ID: "gone", Ref: "RT#9", Retired: true, Deleted: t0, Missing: 3})
	}); err != nil {
		t.Fatal(err)
	}
	if err := h.Refresh(); err != nil {
		t.Fatal(err)
	}
	page := getOK(t, s, "/")
	if want := "Not synced: 1 deleted on the platform, 1 helpdesk tickets of another hotel"; !strings.Contains(page, want) {
		t.Errorf("the overview lacks %q", want)
	}
}
