package statuspage

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
)

// TestOverviewCountsNotSynced: the overview counts the requests deleted
// on the platform and the helpdesk tickets of another hotel, next to the
// failing ones, and says nothing of them while there are none.
func TestOverviewCountsNotSynced(t *testing.T) {
	st := fixture(t, 3)
	h := NewHotel("", st, func() time.Time { return t0 })
	s, err := New(Options{Hotels: only(h), One: true, Now: func() time.Time { return t0 }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	if page := getOK(t, srv.URL+"/"); strings.Contains(page, "Not synced") {
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
	page := getOK(t, srv.URL+"/")
	if want := "Not synced: 1 deleted on the platform, 1 helpdesk tickets of another hotel"; !strings.Contains(page, want) {
		t.Errorf("the overview lacks %q", want)
	}
}
