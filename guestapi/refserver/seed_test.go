package refserver_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
)

func TestLoadSeedExample(t *testing.T) {
	file, err := os.Open("testdata/seed.json")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	seed, err := refserver.LoadSeed(file)
	if err != nil {
		t.Fatal(err)
	}
	srv := refserver.New(refserver.Options{Now: func() time.Time { return start }})
	if err := srv.ApplySeed(seed); err != nil {
		t.Fatal(err)
	}
	v, err := srv.Ticket("0d9a7c1e-5b43-4e2f-8a61-7c0b9e1f2a11")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Messages) != 2 || v.Messages[0].Source != "seed" || v.Ticket.TargetDueAt == nil || v.Ticket.UpdatedAt.Minute() != 1 {
		t.Errorf("seeded ticket %+v", v)
	}
	w, _ := srv.Ticket("1e8b6d2f-4c32-4d1e-9b72-8d1c0f2e3b22")
	if w.Ticket.Status != guestapi.StatusConfirmed || *w.Ticket.GuestRating != 4 || !w.Ticket.UpdatedAt.Equal(w.Ticket.CreatedAt) || w.Ticket.CreatedAt.Nanosecond() != 123456000 {
		t.Errorf("seeded ticket %+v", w.Ticket)
	}
	keys, _ := srv.Keys("6f1c2a4e-0b7d-4c55-9a1e-3d2b8c7f1a01")
	if len(keys) != 2 || keys[1].ExpiresAt == nil || keys[1].Platform != refserver.PlatformAdmin {
		t.Errorf("keys %+v", keys)
	}
	// Applying it twice is refused and changes nothing.
	if err := srv.ApplySeed(seed); err == nil || !strings.Contains(err.Error(), "organizations[0].id: duplicate") {
		t.Errorf("second apply: %v", err)
	}
	if got := len(srv.Organizations()); got != 2 {
		t.Errorf("%d organisations after a refused apply", got)
	}
}

func TestLoadSeedErrors(t *testing.T) {
	const (
		tid = "0d9a7c1e-5b43-4e2f-8a61-7c0b9e1f2a11"
		mid = "5e1f0a2b-3c4d-4e5f-8a9b-0c1d2e3f4a11"
		ts  = "2026-03-04T10:00:00.000000+00:00"
	)
	ticket := func(extra string) string {
		return `{"id":"` + tid + `","department":"d","task_description":"x","created_at":"` + ts + `"` + extra + `}`
	}
	org := func(body string) string { return `{"organizations":[{"id":"o1"` + body + `}]}` }
	msg := func(extra string) string {
		return `,"messages":[{"id":"` + mid + `","author_type":"guest","body":"b","created_at":"` + ts + `"` + extra + `}]`
	}
	cases := []struct{ name, seed, want string }{
		{"not JSON", `{`, "load seed"},
		{"trailing data", `{} {}`, "data after"},
		{"unknown top field", `{"orgs":[]}`, "seed.orgs: unknown field"},
		{"unknown org field", org(`,"name":"x"`), "organizations[0].name: unknown field"},
		{"org without id", `{"organizations":[{}]}`, "organizations[0].id: missing"},
		{"duplicate org", `{"organizations":[{"id":"a"},{"id":"a"}]}`, "organizations[1].id: duplicate"},
		{"bad product type", org(`,"product_type":"castle"`), "organizations[0].product_type"},
		{"key without prefix", org(`,"keys":[{"name":"k","value":"abc"}]`), "organizations[0].keys[0].value"},
		{"key prefix only", org(`,"keys":[{"name":"k","value":"rta_"}]`), "organizations[0].keys[0].value"},
		{"duplicate key value", org(`,"keys":[{"name":"k","value":"rta_a"},{"name":"l","value":"rta_a"}]`), "organizations[0].keys[1].value"},
		{"duplicate key name", org(`,"keys":[{"name":"k","value":"rta_a"},{"name":"k","value":"rta_b"}]`), "organizations[0].keys[1].name"},
		{"bad platform", org(`,"keys":[{"name":"k","value":"rta_a","platform":"root"}]`), "organizations[0].keys[0].platform"},
		{"bad ticket right", org(`,"keys":[{"name":"k","value":"rta_a","tickets":"all"}]`), "organizations[0].keys[0].tickets"},
		{"bad key expiry", org(`,"keys":[{"name":"k","value":"rta_a","expires_at":"soon"}]`), "organizations[0].keys[0].expires_at"},
		{"unknown key field", org(`,"keys":[{"name":"k","value":"rta_a","scope":"x"}]`), "organizations[0].keys[0].scope: unknown field"},
		{"ticket id not uuid", org(`,"tickets":[{"id":"t1","department":"d","task_description":"x","created_at":"` + ts + `"}]`), "organizations[0].tickets[0].id"},
		{"duplicate ticket", org(`,"tickets":[` + ticket("") + `,` + ticket("") + `]`), "organizations[0].tickets[1].id: duplicate"},
		{"bad created_at", org(`,"tickets":[{"id":"` + tid + `","department":"d","task_description":"x","created_at":"2026-03-04 10:00"}]`), "organizations[0].tickets[0].created_at"},
		{"missing created_at", org(`,"tickets":[{"id":"` + tid + `","department":"d","task_description":"x"}]`), "organizations[0].tickets[0].created_at: missing"},
		{"updated before created", org(`,"tickets":[` + ticket(`,"updated_at":"2026-03-03T10:00:00Z"`) + `]`), "organizations[0].tickets[0].updated_at"},
		{"bad due", org(`,"tickets":[` + ticket(`,"target_due_at":12`) + `]`), "organizations[0].tickets[0].target_due_at"},
		{"bad status", org(`,"tickets":[` + ticket(`,"status":"open"`) + `]`), "organizations[0].tickets[0].status"},
		{"bad origin", org(`,"tickets":[` + ticket(`,"origin":"robot"`) + `]`), "organizations[0].tickets[0].origin"},
		{"bad rating", org(`,"tickets":[` + ticket(`,"guest_rating":"five"`) + `]`), "organizations[0].tickets[0].guest_rating"},
		{"rating out of range", org(`,"tickets":[` + ticket(`,"guest_rating":12`) + `]`), "organizations[0].tickets[0].guest_rating"},
		{"missing department", org(`,"tickets":[{"id":"` + tid + `","task_description":"x","created_at":"` + ts + `"}]`), "organizations[0].tickets[0].department: missing"},
		{"unknown ticket field", org(`,"tickets":[` + ticket(`,"priority":1`) + `]`), "organizations[0].tickets[0].priority: unknown field"},
		{"bad author type", org(`,"tickets":[` + ticket(msg(`,"author_type":"bot"`)) + `]`), "organizations[0].tickets[0].messages[0].author_type"},
		{"bad message time", org(`,"tickets":[` + ticket(msg(`,"created_at":"later"`)) + `]`), "organizations[0].tickets[0].messages[0].created_at"},
		{"unknown message field", org(`,"tickets":[` + ticket(msg(`,"attachments":[]`)) + `]`), "organizations[0].tickets[0].messages[0].attachments: unknown field"},
		{"visible not bool", org(`,"tickets":[` + ticket(msg(`,"visible_to_guest":"yes"`)) + `]`), "organizations[0].tickets[0].messages[0].visible_to_guest"},
		{"tickets not array", org(`,"tickets":{}`), "organizations[0].tickets: want an array"},
	}
	for _, c := range cases {
		_, err := refserver.LoadSeed(strings.NewReader(c.seed))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

func TestSeedDuplicateMessageIDs(t *testing.T) {
	srv := refserver.New(refserver.Options{})
	m := guestapi.Message{ID: "5e1f0a2b-3c4d-4e5f-8a9b-0c1d2e3f4a11", AuthorType: guestapi.AuthorGuest, Body: "b", CreatedAt: start}
	seed := refserver.Seed{Organizations: []refserver.SeedOrganization{{ID: "o", Tickets: []refserver.SeedTicket{
		{ID: "0d9a7c1e-5b43-4e2f-8a61-7c0b9e1f2a11", Department: "d", TaskDescription: "x", CreatedAt: start, Messages: []guestapi.Message{m}},
		{ID: "0d9a7c1e-5b43-4e2f-8a61-7c0b9e1f2a12", Department: "d", TaskDescription: "x", CreatedAt: start, Messages: []guestapi.Message{m}},
	}}}}
	err := srv.ApplySeed(seed)
	if err == nil || !strings.Contains(err.Error(), "organizations[0].tickets[1].messages[0].id: duplicate") {
		t.Fatalf("got %v", err)
	}
	if len(srv.Organizations()) != 0 {
		t.Errorf("a refused seed left organisations behind")
	}
}

func TestDemoSeed(t *testing.T) {
	srv := refserver.New(refserver.Options{Now: func() time.Time { return start }})
	seed := refserver.DemoSeed(start)
	if err := srv.ApplySeed(seed); err != nil {
		t.Fatal(err)
	}
	if len(seed.Organizations) != 2 || len(srv.Tickets(refserver.DemoOrganization)) < 4 || len(srv.Tickets(refserver.DemoOtherOrganization)) != 1 {
		t.Fatalf("demo has %d organisations", len(seed.Organizations))
	}
	depts := map[string]bool{}
	for _, tv := range srv.Tickets(refserver.DemoOrganization) {
		depts[tv.Department] = true
		if tv.CreatedAt.After(start) {
			t.Errorf("demo ticket %s is in the future", tv.ID)
		}
	}
	for _, d := range []string{"housekeeping", "maintenance", "front_desk"} {
		if !depts[d] {
			t.Errorf("demo lacks department %s", d)
		}
	}
	if v, ok := seed.KeyValue(refserver.DemoOrganization, refserver.DemoKeyPlatformWrite); !ok || !strings.HasPrefix(v, "rta_") {
		t.Errorf("KeyValue: %v", ok)
	}
	if _, ok := seed.KeyValue(refserver.DemoOtherOrganization, refserver.DemoKeyPlatformWrite); ok {
		t.Errorf("KeyValue found a key the other organisation lacks")
	}
	// Key values differ between calls; they are never printed by String.
	again := refserver.DemoSeed(start)
	k1, k2 := seed.Organizations[0].Keys[0], again.Organizations[0].Keys[0]
	if k1.Value == k2.Value {
		t.Errorf("demo keys repeat across calls")
	}
	if strings.Contains(k1.String(), k1.Value) {
		t.Errorf("SeedKey.String shows the value")
	}
	if b, _ := json.Marshal(srv.Stats()); len(b) == 0 {
		t.Errorf("stats do not marshal")
	}
}
