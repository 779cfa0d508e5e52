package saas

import "github.com/ticketbridge/ticketbridge/adapters"

// Markers is what the bridge's own comments in a ticket record, read from
// their markers: what Lookup reports after the bridge's state was lost,
// and what Append and MarkSent check before writing.
type Markers struct {
	Messages map[string]string // upstream message id -> helpdesk comment id
	Sent     map[string]string // helpdesk event id -> upstream message id
	Unsent   map[string]bool   // helpdesk event ids whose files are noted as not sent
	// Noted holds the markers of the notes of a rating or a console
	// comment (see [adapters.RatingNote]), with their comment ids.
	Noted map[adapters.Marker]string
}

// NewMarkers returns empty Markers.
func NewMarkers() Markers {
	return Markers{Messages: map[string]string{}, Sent: map[string]string{}, Unsent: map[string]bool{}, Noted: map[adapters.Marker]string{}}
}

// Add records the marker mk of the bridge's comment helpdeskID. Of two
// comments with the same marker, the first counts.
func (h Markers) Add(mk adapters.Marker, helpdeskID string) {
	switch mk.Kind {
	case adapters.MarkerMessage:
		if _, dup := h.Messages[mk.ID]; !dup {
			h.Messages[mk.ID] = helpdeskID
		}
	case adapters.MarkerSent:
		if _, dup := h.Sent[mk.ID]; !dup {
			h.Sent[mk.ID] = mk.Arg
		}
	case adapters.MarkerUnsent:
		h.Unsent[mk.ID] = true
	case adapters.MarkerRating, adapters.MarkerComment:
		if _, dup := h.Noted[mk]; !dup {
			h.Noted[mk] = helpdeskID
		}
	}
}

// Text records the marker of the bridge's comment helpdeskID whose text is
// text, if it has one.
func (h Markers) Text(text, helpdeskID string) {
	if mk, ok := adapters.ParseMarker(text); ok {
		h.Add(mk, helpdeskID)
	}
}

// Merge adds what o holds to h; what h holds already stays.
func (h Markers) Merge(o Markers) {
	for k, v := range o.Messages {
		if _, dup := h.Messages[k]; !dup {
			h.Messages[k] = v
		}
	}
	for k, v := range o.Sent {
		if _, dup := h.Sent[k]; !dup {
			h.Sent[k] = v
		}
	}
	for k := range o.Unsent {
		h.Unsent[k] = true
	}
	for k, v := range o.Noted {
		if _, dup := h.Noted[k]; !dup {
			h.Noted[k] = v
		}
	}
}

// Found is what Lookup reports of ticket ref holding h.
func (h Markers) Found(ref adapters.Ref) adapters.Found {
	return adapters.Found{Ref: ref, Messages: h.Messages, Sent: h.Sent}
}
