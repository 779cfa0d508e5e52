package sync

import (
	"fmt"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
)

// What refresh does with a ticket's thread: the plan of its read (which
// messages to append, which status to set, which helpdesk changes an
// upstream one overrides), decided without I/O.

// threadPlan is what refresh does with one ticket, decided from its read.
type threadPlan struct {
	append    []adapters.Message // upstream messages to append to the helpdesk, in order
	refused   []string           // ids of messages state cannot store: skipped
	held      bool               // a staff message matched a post of the bridge not yet confirmed
	setStatus guestapi.Status    // the status to set in the helpdesk; "" leaves it
	supersede []state.Entry      // pending helpdesk status changes the upstream change overrides
	// active says whether anything changed on either side: the ticket is
	// read again on the next cycle.
	active bool
	// unsignalled says that the read found a new message although
	// updated_at stayed as stored: no list could have shown it.
	unsignalled bool
}

// planThread decides what to do with the thread th of tracked ticket t.
// known holds the upstream messages the helpdesk already has and the
// bridge's own posts; pend the ticket's pending journal entries, oldest
// first. It does no I/O.
//
// New messages are appended in order. A staff message that matches a post
// of the bridge not yet confirmed (a crash, or an answer lost, after the
// API stored it) is the bridge's own: it is held back until the send
// confirms it and records its id. Everything else is mirrored, so a reply
// stuck in backoff never holds back what the guest writes. When both sides
// changed the status, the newer change wins.
func planThread(t state.Ticket, th *guestapi.Thread, known map[string]bool, pend []state.Entry) threadPlan {
	var p threadPlan
	d := th.Ticket
	var hdStatus []state.Entry
	ownBodies := map[string]bool{}
	for _, en := range pend {
		if en.Kind == state.KindStatus {
			hdStatus = append(hdStatus, en)
		} else {
			ownBodies[postKey(en.Payload.Body, en.Payload.Visible)] = true
		}
	}
	first := t.UpstreamStatus == "" // the first read finds old news
	newer := false                  // a new message written after the stored updated_at
	for _, m := range th.Messages {
		if known[m.ID] {
			continue
		}
		if !validID(m.ID) {
			p.refused = append(p.refused, m.ID)
			continue
		}
		if m.AuthorType != guestapi.AuthorGuest && ownBodies[postKey(m.Body, m.VisibleToGuest)] {
			p.held = true
			continue
		}
		if m.CreatedAt.After(t.UpstreamUpdatedAt) {
			newer = true
		}
		p.append = append(p.append, adapters.Message{
			UpstreamID: m.ID, AuthorType: m.AuthorType, AuthorName: m.AuthorName,
			Body: mirrorBody(m.Body), Public: m.VisibleToGuest, CreatedAt: m.CreatedAt,
		})
	}

	upChanged := string(d.Status) != t.UpstreamStatus
	setDown := string(d.Status) != t.HelpdeskStatus
	if len(hdStatus) > 0 {
		last := hdStatus[len(hdStatus)-1]
		if upChanged && d.UpdatedAt.After(last.CreatedAt) && !explainedByMessage(th.Messages, d.UpdatedAt, last.CreatedAt) {
			p.supersede = hdStatus
		} else {
			setDown = false // the helpdesk's change is newer: it goes up
		}
	}
	if setDown {
		p.setStatus = d.Status
	}
	p.active = p.held || len(pend) > 0 || t.DueReason == DueEvent || (!first && (len(p.append) > 0 || upChanged))
	// A status change is in the lists (they show the status); a message
	// is there only through updated_at.
	p.unsignalled = !first && newer && d.UpdatedAt.Equal(t.UpstreamUpdatedAt)
	return p
}

// NoTextPlaceholder stands in the helpdesk for an upstream message without
// text. The API returns no attachments, so a guest who sends only a photo
// produces one; adapters refuse an empty body, and the ticket would
// otherwise be stuck on it.
const NoTextPlaceholder = "(no text: the guest request holds only what the API does not return, such as a photo)"

func mirrorBody(body string) string {
	if strings.TrimSpace(body) == "" {
		return NoTextPlaceholder
	}
	return body
}

// postKey identifies a post by what the API keeps of it: its text, spaces
// around it aside, and its visibility.
func postKey(body string, visible bool) string {
	return fmt.Sprintf("%t\x00%s", visible, strings.TrimSpace(body))
}

// explainedByMessage reports whether a message written after the helpdesk
// change (at) may be what moved updated_at. Then updated_at says nothing of
// when the upstream status changed, and the helpdesk's change, whose time
// is known, is taken as the newer.
func explainedByMessage(msgs []guestapi.Message, updated, at time.Time) bool {
	for _, m := range msgs {
		if m.CreatedAt.After(at) && !m.CreatedAt.Before(updated) {
			return true
		}
	}
	return false
}
