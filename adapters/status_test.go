package adapters

import (
	"testing"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

func TestAPIStatusMapSpeaksTheAPIsWords(t *testing.T) {
	m := APIStatusMap()
	for _, s := range guestapi.Statuses() {
		if got := m.Down(s); got != string(s) {
			t.Errorf("Down(%s) = %q, want %q", s, got, s)
		}
	}
	for _, s := range guestapi.SettableStatuses() {
		if got, ok := m.Up(string(s)); !ok || got != s {
			t.Errorf("Up(%s) = %q, %v; want %q", s, got, ok, s)
		}
	}
	if _, ok := m.Up(string(guestapi.StatusConfirmed)); ok {
		t.Error("confirmed is carried upstream; the API does not let it be set")
	}
}
