package adapters

import "github.com/ticketbridge/ticketbridge/internal/redact"

// Locator is implemented by adapters whose helpdesk is at a place of its
// own: a URL, a folder, a mailbox, a queue. The engine records where the
// state's helpdesk is, and holds a hotel whose configuration points at
// another one (a copied or restored state started against a different
// helpdesk) until an operator confirms the move.
//
// Location says where the helpdesk is, the same way each time for the
// same place: a URL as redact.Place gives it (no credentials, query or
// fragment), an absolute folder, and what else tells two helpdesks of the
// same kind apart (RT's queue, a mailbox's user and folder). It holds no
// secret and no host name of the machine the daemon runs on: a replica
// that takes the hotel over, or a container started anew, serves the same
// helpdesk. It does no I/O.
type Locator interface {
	Location() string
}

// HelpdeskIdentity is what names h's helpdesk: the adapter's name, and its
// [Locator.Location] when it has one ("files /srv/helpdesk",
// "rt https://rt.example/rt queue General").
func HelpdeskIdentity(h Helpdesk) string {
	if l, ok := h.(Locator); ok {
		if at := l.Location(); at != "" {
			return h.Name() + " " + at
		}
	}
	return h.Name()
}

// TicketLinker is implemented by adapters whose helpdesk has a web UI
// where an agent opens a ticket: Request Tracker, Zendesk, Freshdesk,
// Zammad. The status page links a request's page to it.
//
// TicketURL returns the address of ticket ref in that UI, built from the
// helpdesk's configured address as [redact.Place] gives it (no
// credentials, query or fragment); "" when ref is no ticket the adapter
// could have made. It does no I/O, and it may be called after Close.
type TicketLinker interface {
	TicketURL(ref Ref) string
}

// TicketURL returns the address of ticket ref in h's web UI
// ([TicketLinker]); "" when h has none, or ref is empty.
func TicketURL(h Helpdesk, ref Ref) string {
	if l, ok := h.(TicketLinker); ok && ref != "" {
		return l.TicketURL(ref)
	}
	return ""
}

// WebURL returns the page at path (which starts with "/", "#" or "?") of
// the helpdesk whose configured address is base: base as [redact.Place]
// gives it, never its credentials, query or fragment, followed by path;
// "" when base is no URL with a host.
func WebURL(base, path string) string {
	at := redact.Place(base)
	if at == "" {
		return ""
	}
	return at + path
}
