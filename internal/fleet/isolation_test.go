package fleet

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
)

// TestFleetIsolation is a property test of invariant 5 across the hotels of
// one daemon: random hotels, each an organisation of one reference server
// with a files helpdesk of its own, random guest requests and messages,
// random agent replies dropped in random hotels' helpdesks, and cycles of
// every hotel run at once. Afterwards each helpdesk holds its own
// organisation's requests and messages only, every request of each
// organisation is in its hotel's helpdesk, and each reply reached its own
// hotel's request only. TICKETBRIDGE_RELIABILITY=full makes more rounds.
func TestFleetIsolation(t *testing.T) {
	seed := uint64(20261123)
	rnd := rand.New(rand.NewPCG(seed, seed))
	rounds := 6
	if os.Getenv("TICKETBRIDGE_RELIABILITY") == "full" {
		rounds = 30
	}
	fx := newFleetFixture(t)
	var hotels []string
	for i := range 3 + rnd.IntN(3) {
		n := fmt.Sprintf("hotel-%d", i)
		hotels = append(hotels, n)
		fx.WriteHotel(n, nil)
	}
	// texts[h] holds every text that belongs to hotel h alone; tickets[h]
	// its organisation's requests.
	texts := map[string][]string{}
	tickets := map[string][]string{}
	replies := map[string]string{} // reply text -> hotel
	addTicket := func(h string) {
		desc := fmt.Sprintf("request %d of %s, private", len(tickets[h]), h)
		id := fx.Ticket(h, desc)
		tickets[h] = append(tickets[h], id)
		texts[h] = append(texts[h], desc)
	}
	for _, h := range hotels {
		addTicket(h)
	}
	fx.start()
	fx.WaitCycles(hotels...)

	cycleAll := func() {
		var wg gosync.WaitGroup
		for name, rh := range fx.running() {
			wg.Go(func() {
				if _, err := rh.bridge().Engine().RunCycle(context.Background()); err != nil {
					t.Errorf("hotel %s: cycle: %v", name, err)
				}
			})
		}
		wg.Wait()
	}
	for r := range rounds {
		for range 1 + rnd.IntN(2*len(hotels)) {
			h := hotels[rnd.IntN(len(hotels))]
			switch rnd.IntN(3) {
			case 0:
				addTicket(h)
			case 1:
				id := tickets[h][rnd.IntN(len(tickets[h]))]
				body := fmt.Sprintf("guest message %d.%d of %s, private", r, rnd.IntN(1000), h)
				if _, err := fx.TS.Server.AddMessage(id, refserver.ConsoleMessage{AuthorType: guestapi.AuthorGuest, Body: body}); err != nil {
					t.Fatal(err)
				}
				texts[h] = append(texts[h], body)
			case 2:
				fs := fx.Folders(h)
				if len(fs) == 0 {
					continue
				}
				body := fmt.Sprintf("agent reply %d.%d from %s", r, rnd.IntN(1000), h)
				p := filepath.Join(fx.FilesDir(h), "outbox", fmt.Sprintf("r%d-%d.txt", r, rnd.IntN(1e6)))
				if err := os.WriteFile(p, []byte("ticket: "+fs[rnd.IntN(len(fs))]+"\nkind: reply\nauthor: Maria\n\n"+body+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				replies[body] = h
				texts[h] = append(texts[h], body)
			}
		}
		cycleAll()
	}
	cycleAll() // a last cycle mirrors back what the previous one sent

	owner := map[string]string{} // ticket id -> hotel
	for h, ids := range tickets {
		for _, id := range ids {
			owner[id] = h
		}
	}
	for _, h := range hotels {
		// Each folder is a request of the hotel's own organisation, and
		// every request of it has its folder.
		folders := fx.Folders(h)
		if len(folders) != len(tickets[h]) {
			t.Errorf("hotel %s: %d folders for %d requests", h, len(folders), len(tickets[h]))
		}
		for _, f := range folders {
			found := false
			for id, o := range owner {
				if strings.HasSuffix(f, id[:8]) {
					found = true
					if o != h {
						t.Errorf("hotel %s's helpdesk holds %s, a request of %s", h, f, o)
					}
				}
			}
			if !found {
				t.Errorf("hotel %s's helpdesk holds %s, a request of no hotel", h, f)
			}
		}
		// No text of another hotel is in any file of its helpdesk.
		err := filepath.WalkDir(fx.FilesDir(h), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for other, ts := range texts {
				if other == h {
					continue
				}
				for _, txt := range ts {
					if strings.Contains(string(b), txt) {
						t.Errorf("hotel %s's helpdesk file %s holds %q of %s", h, p, txt, other)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Each reply reached a request of its own hotel, once.
	for reply, h := range replies {
		n := 0
		for id, o := range owner {
			iv, err := fx.TS.Server.Ticket(id)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range iv.Messages {
				if strings.Contains(m.Body, reply) {
					n++
					if o != h {
						t.Errorf("the reply %q of %s reached %s's request %s", reply, h, o, id)
					}
				}
			}
		}
		if n != 1 {
			t.Errorf("the reply %q of %s is upstream %d times, want once", reply, h, n)
		}
	}
	if len(replies) == 0 || len(owner) < len(hotels)+2 {
		t.Fatalf("the random activity was too thin to test anything: %d replies, %d requests", len(replies), len(owner))
	}
}
