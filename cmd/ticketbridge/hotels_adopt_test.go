package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHotelsAdopt: the one hotel served so far becomes a hotel of the
// hotels directory with its state and helpdesk folder: the hotel's first
// cycle imports nothing again, and the staff reply left unread in the old
// outbox reaches the guest.
func TestHotelsAdopt(t *testing.T) {
	b := newBridge(t)
	id := b.ticket("towels")
	if out, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("once: exit %d\n%s%s", code, out, errOut)
	}
	helpdesk := b.vars["TICKETBRIDGE_FILES_DIR"]
	folder := b.folder(id)
	const reply = "Two towels are on their way."
	b.drop("towels.txt", "ticket: "+id+"\nkind: reply\nauthor: Ana (front desk)\n\n"+reply+"\n")

	// As the README's "Many hotels" says: the hotels directory, the
	// hotel's file naming its key, its adapter and its folder.
	hotels := filepath.Join(b.dir, "hotels.d")
	seaside := filepath.Join(helpdesk, "seaside")
	writeFile(t, filepath.Join(hotels, "seaside.env"), "TICKETBRIDGE_API_KEY_FILE="+b.vars["TICKETBRIDGE_API_KEY_FILE"]+
		"\nTICKETBRIDGE_ADAPTER=files\nTICKETBRIDGE_FILES_DIR="+seaside+"\n", 0o600)
	b.vars["TICKETBRIDGE_HOTELS_DIR"] = hotels

	out, errOut, code := b.cmd("hotels", "adopt", "seaside")
	if code != 0 {
		t.Fatalf("hotels adopt: exit %d\n%s%s", code, out, errOut)
	}
	newState := filepath.Join(b.dir, "hotels", "seaside.db")
	if _, err := os.Stat(newState); err != nil {
		t.Fatalf("the state did not move to the hotel's: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(seaside, "tickets", folder)); err != nil {
		t.Fatalf("the helpdesk folder did not move into the hotel's: %v\n%s", err, out)
	}
	// Adopting again finds the hotel's state and changes nothing.
	if _, errOut, code := b.cmd("hotels", "adopt", "seaside"); code != 1 || !strings.Contains(errOut, "no state of the one hotel") {
		t.Fatalf("adopt again: exit %d\n%s", code, errOut)
	}

	posts := b.posts()
	if out, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("once of the hotels: exit %d\n%s%s", code, out, errOut)
	}
	des, err := os.ReadDir(filepath.Join(seaside, "tickets"))
	if err != nil || len(des) != 1 || des[0].Name() != folder {
		t.Fatalf("the hotel's tickets after its first cycle: %v %v, want the one folder %s: imported again", des, err, folder)
	}
	v, err := b.ts.Server.Ticket(id)
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	for _, m := range v.Messages {
		if strings.Contains(m.Body, reply) {
			sent++
		}
	}
	if sent != 1 || b.posts() == posts {
		t.Fatalf("the reply left in the old outbox reached the guest %d times, want once", sent)
	}
}

// TestHotelsAdoptRefuses: adopt changes nothing where it would lose or
// overwrite something.
func TestHotelsAdoptRefuses(t *testing.T) {
	b := newBridge(t)
	b.ticket("towels")
	if out, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("once: exit %d\n%s%s", code, out, errOut)
	}
	hotels := filepath.Join(b.dir, "hotels.d")
	seaside := filepath.Join(b.dir, "seaside-helpdesk")
	hotelFile := filepath.Join(hotels, "seaside.env")
	writeFile(t, hotelFile, "TICKETBRIDGE_API_KEY_FILE="+b.vars["TICKETBRIDGE_API_KEY_FILE"]+
		"\nTICKETBRIDGE_ADAPTER=files\nTICKETBRIDGE_FILES_DIR="+seaside+"\n", 0o600)

	for _, tc := range []struct {
		name, want string
		setup      func()
	}{
		{"no hotels directory", "TICKETBRIDGE_HOTELS_DIR is not set", func() {}},
		{"no such hotel", "no hotel airport", func() { b.vars["TICKETBRIDGE_HOTELS_DIR"] = hotels }},
		{"another adapter", "uses the adapter webhook", func() {
			writeFile(t, hotelFile, "TICKETBRIDGE_API_KEY_FILE="+b.vars["TICKETBRIDGE_API_KEY_FILE"]+
				"\nTICKETBRIDGE_ADAPTER=webhook\nTICKETBRIDGE_WEBHOOK_LISTEN=off\nTICKETBRIDGE_WEBHOOK_URL=https://example.com/hook\nTICKETBRIDGE_WEBHOOK_DIR="+filepath.Join(b.dir, "webhook")+"\n", 0o600)
		}},
		{"a folder entry in the way", "holds tickets already", func() {
			writeFile(t, hotelFile, "TICKETBRIDGE_API_KEY_FILE="+b.vars["TICKETBRIDGE_API_KEY_FILE"]+
				"\nTICKETBRIDGE_ADAPTER=files\nTICKETBRIDGE_FILES_DIR="+seaside+"\n", 0o600)
			if err := os.MkdirAll(filepath.Join(seaside, "tickets"), 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{"a hotel that ran", "has a state already", func() {
			writeFile(t, filepath.Join(b.dir, "hotels", "seaside.db"), "", 0o600)
		}},
	} {
		tc.setup()
		hotel := "seaside"
		if tc.name == "no such hotel" {
			hotel = "airport"
		}
		_, errOut, code := b.cmd("hotels", "adopt", hotel)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, want %q:\n%s", tc.name, code, tc.want, errOut)
		}
		if _, err := os.Stat(b.vars["TICKETBRIDGE_STATE"]); err != nil {
			t.Fatalf("%s: the one hotel's state moved: %v", tc.name, err)
		}
	}
}

// TestHotelsAdoptFollowsNoPlantedLink: the hotel's new helpdesk folder
// lies in the staff's folder (2770), where a member of the group can make
// it a link, to /etc/profile.d say, and drop a script into the old folder.
// adopt, which an administrator runs as root, refuses and moves nothing,
// neither the state nor the script.
func TestHotelsAdoptFollowsNoPlantedLink(t *testing.T) {
	b := newBridge(t)
	b.ticket("towels")
	if out, errOut, code := b.cmd("once"); code != 0 {
		t.Fatalf("once: exit %d\n%s%s", code, out, errOut)
	}
	helpdesk := b.vars["TICKETBRIDGE_FILES_DIR"]
	if err := os.Chmod(helpdesk, os.ModeSetgid|0o770); err != nil { // as installed
		t.Fatal(err)
	}
	profiled := filepath.Join(t.TempDir(), "profile.d")
	if err := os.Mkdir(profiled, 0o755); err != nil {
		t.Fatal(err)
	}
	seaside := filepath.Join(helpdesk, "seaside")
	if err := os.Symlink(profiled, seaside); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(helpdesk, "zz-x.sh"), "echo planted\n", 0o644)
	hotels := filepath.Join(b.dir, "hotels.d")
	writeFile(t, filepath.Join(hotels, "seaside.env"), "TICKETBRIDGE_API_KEY_FILE="+b.vars["TICKETBRIDGE_API_KEY_FILE"]+
		"\nTICKETBRIDGE_ADAPTER=files\nTICKETBRIDGE_FILES_DIR="+seaside+"\n", 0o600)
	b.vars["TICKETBRIDGE_HOTELS_DIR"] = hotels

	out, errOut, code := b.cmd("hotels", "adopt", "seaside")
	if code == 0 || !strings.Contains(errOut, "symbolic link") {
		t.Errorf("hotels adopt into a planted link: exit %d, want a refusal naming the link\n%s%s", code, out, errOut)
	}
	if des, _ := os.ReadDir(profiled); len(des) != 0 {
		t.Errorf("adopt moved %d entries through the link, %s first", len(des), des[0].Name())
	}
	if _, err := os.Stat(b.vars["TICKETBRIDGE_STATE"]); err != nil {
		t.Errorf("the one hotel's state moved: %v", err)
	}
}
