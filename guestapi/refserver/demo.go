package refserver

import (
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

// Organisations of the demo seed.
const (
	DemoOrganization      = "6f1c2a4e-0b7d-4c55-9a1e-3d2b8c7f1a01" // Hotel Aurora
	DemoOtherOrganization = "9b3e5d71-2c4a-4f86-8e0d-5a6c7b8d9e02" // Seaside Apartments
)

// Names of the demo seed's keys, one of each right, in both organisations
// (the other organisation has only demo-tickets-write).
const (
	DemoKeyTicketsWrite  = "demo-tickets-write"
	DemoKeyTicketsRead   = "demo-tickets-read"
	DemoKeyPlatformAdmin = "demo-platform-admin"
	DemoKeyPlatformWrite = "demo-platform-write"
	DemoKeyPlatformRead  = "demo-platform-read"
)

// DemoSeed returns two organisations with a few realistic hotel requests
// and their threads, dated relative to now, and keys of each right. The
// ticket and message ids are fixed; the key values are new random ones on
// every call (read them from the returned seed).
func DemoSeed(now time.Time) Seed {
	now = now.UTC().Truncate(time.Microsecond)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	ptr := func(t time.Time) *time.Time { return &t }
	str := func(s string) *string { return &s }
	rating := func(f float64) *float64 { return &f }
	key := func(name string, p Platform, t TicketRight) SeedKey {
		return SeedKey{Name: name, Value: newSecret(KeyPrefix), Platform: p, Tickets: t}
	}
	msg := func(id string, a guestapi.AuthorType, name, body string, visible bool, at time.Time) guestapi.Message {
		return guestapi.Message{ID: id, AuthorType: a, AuthorName: name, Body: body, VisibleToGuest: visible, CreatedAt: at}
	}
	return Seed{Organizations: []SeedOrganization{
		{
			ID:          DemoOrganization,
			ProductType: "hotel",
			Keys: []SeedKey{
				key(DemoKeyTicketsWrite, PlatformRead, TicketsWrite),
				key(DemoKeyTicketsRead, PlatformRead, TicketsRead),
				key(DemoKeyPlatformAdmin, PlatformAdmin, TicketsNone),
				key(DemoKeyPlatformWrite, PlatformWrite, TicketsNone),
				key(DemoKeyPlatformRead, PlatformRead, TicketsNone),
			},
			Tickets: []SeedTicket{
				{
					ID: "0d9a7c1e-5b43-4e2f-8a61-7c0b9e1f2a11", Department: "housekeeping", Status: guestapi.StatusNew,
					TaskDescription: "Two extra bath towels to room 214", Origin: guestapi.OriginGuest,
					TargetDueAt: ptr(ago(-30 * time.Minute)), CreatedAt: ago(20 * time.Minute),
					Messages: []guestapi.Message{
						msg("5e1f0a2b-3c4d-4e5f-8a9b-0c1d2e3f4a11", guestapi.AuthorGuest, "Anna Berg", "Hi, could we get two more bath towels in 214, please?", true, ago(20*time.Minute)),
						msg("5e1f0a2b-3c4d-4e5f-8a9b-0c1d2e3f4a12", guestapi.AuthorAI, "AI concierge", "Of course! I have passed your request to housekeeping.", true, ago(19*time.Minute)),
					},
				},
				{
					ID: "1e8b6d2f-4c32-4d1e-9b72-8d1c0f2e3b22", Department: "maintenance", Status: guestapi.StatusInProgress,
					TaskDescription: "Bedside lamp broken in room 305", Origin: guestapi.OriginGuest,
					Comments: str("Spare lamps are in the basement store, shelf B."), TargetDueAt: ptr(ago(-2 * time.Hour)),
					CreatedAt: ago(3 * time.Hour),
					Messages: []guestapi.Message{
						msg("6f2a1b3c-4d5e-4f6a-9b0c-1d2e3f4a5b21", guestapi.AuthorGuest, "Marco Rossi", "The lamp next to the bed does not turn on. Bulb seems fine.", true, ago(3*time.Hour)),
						msg("6f2a1b3c-4d5e-4f6a-9b0c-1d2e3f4a5b22", guestapi.AuthorStaff, "Jonas (maintenance)", "Probably the switch; taking a spare lamp up.", false, ago(2*time.Hour+30*time.Minute)),
						msg("6f2a1b3c-4d5e-4f6a-9b0c-1d2e3f4a5b23", guestapi.AuthorStaff, "Front desk", "Sorry about that, a technician is on the way.", true, ago(2*time.Hour+25*time.Minute)),
					},
				},
				{
					ID: "2f7c5e3a-3d21-4c0d-8c83-9e2d1a3f4c33", Department: "front_desk", Status: guestapi.StatusNew,
					TaskDescription: "Late checkout until 14:00 on Sunday", Origin: guestapi.OriginGuest,
					CreatedAt: ago(50 * time.Minute),
					Messages: []guestapi.Message{
						msg("7a3b2c4d-5e6f-4a7b-8c1d-2e3f4a5b6c31", guestapi.AuthorGuest, "Lea Novak", "Our flight leaves in the evening. Could we keep the room until 2 pm on Sunday?", true, ago(50*time.Minute)),
					},
				},
				{
					ID: "3a6d4f2b-2e10-4b9c-9d94-0f3e2b4a5d44", Department: "housekeeping", Status: guestapi.StatusDone,
					TaskDescription: "Extra pillow, room 118", Origin: guestapi.OriginGuest, GuestRating: rating(5),
					CreatedAt: ago(26 * time.Hour), UpdatedAt: ago(25 * time.Hour),
					Messages: []guestapi.Message{
						msg("8b4c3d5e-6f7a-4b8c-9d2e-3f4a5b6c7d41", guestapi.AuthorGuest, "Tom Eriksen", "Could I have a firmer pillow?", true, ago(26*time.Hour)),
						msg("8b4c3d5e-6f7a-4b8c-9d2e-3f4a5b6c7d42", guestapi.AuthorStaff, "Housekeeping", "Brought to your room. Sleep well!", true, ago(25*time.Hour+30*time.Minute)),
						msg("8b4c3d5e-6f7a-4b8c-9d2e-3f4a5b6c7d43", guestapi.AuthorSystem, "System", "Request closed.", false, ago(25*time.Hour)),
					},
				},
				{
					ID: "4b5e3a1c-1f0e-4a8b-8e05-1a4f3c5b6e55", Department: "maintenance", Status: guestapi.StatusAssigned,
					TaskDescription: "Quarterly check of the pool heating", Origin: guestapi.OriginInternal,
					TargetDueAt: ptr(ago(-72 * time.Hour)), CreatedAt: ago(48 * time.Hour),
				},
			},
		},
		{
			ID:          DemoOtherOrganization,
			ProductType: "short_term",
			Keys:        []SeedKey{key(DemoKeyTicketsWrite, PlatformRead, TicketsWrite)},
			Tickets: []SeedTicket{
				{
					ID: "5c4f2b0d-0e9f-4f7a-9f16-2b5a4d6c7f66", Department: "front_desk", Status: guestapi.StatusNew,
					TaskDescription: "Key code for apartment 3 does not work", Origin: guestapi.OriginGuest,
					CreatedAt: ago(15 * time.Minute),
					Messages: []guestapi.Message{
						msg("9c5d4e6f-7a8b-4c9d-8e3f-4a5b6c7d8e51", guestapi.AuthorGuest, "Sofia Lindqvist", "We are at the door and the code 4711 is refused.", true, ago(15*time.Minute)),
					},
				},
			},
		},
	}}
}
