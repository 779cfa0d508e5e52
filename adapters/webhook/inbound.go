package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// Limits of an inbound event's fields, in bytes.
const (
	MaxEventIDLen    = 200
	MaxAuthorNameLen = 255
)

// InboundAnswer is the JSON body of every answer of the inbound endpoint.
type InboundAnswer struct {
	OK        bool   `json:"ok"`
	ID        string `json:"id,omitempty"`        // the event id, on success
	Seq       uint64 `json:"seq,omitempty"`       // its place in the adapter's log, on success
	Duplicate bool   `json:"duplicate,omitempty"` // the id was stored before; nothing new was stored
	Error     string `json:"error,omitempty"`     // a code: unauthorized, invalid, unknown_ticket, conflict, too_large, internal
	Field     string `json:"field,omitempty"`     // the field at fault, for invalid and unknown_ticket
	Message   string `json:"message,omitempty"`   // what is wrong, for a person
}

// Handler returns the inbound endpoint, as served on the listen address;
// mount it elsewhere when Listen is "off".
func (a *Adapter) Handler() http.Handler { return a }

// ServeHTTP serves POST /events; see the package doc for the answers.
func (a *Adapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != InboundPath {
		answer(w, http.StatusNotFound, InboundAnswer{Error: "not_found", Message: "the inbound endpoint is POST " + InboundPath})
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		answer(w, http.StatusMethodNotAllowed, InboundAnswer{Error: "method_not_allowed", Message: "use POST"})
		return
	}
	ctx := r.Context()
	now := time.Now()
	body, err := ReadVerified(r, a.key.secret, now, a.cfg.Tolerance, MaxInboundBytes)
	switch {
	case errors.Is(err, ErrTooLarge):
		answer(w, http.StatusRequestEntityTooLarge, InboundAnswer{Error: "too_large", Message: fmt.Sprintf("the body is larger than %d bytes", MaxInboundBytes)})
		return
	case errors.Is(err, ErrStale), errors.Is(err, ErrBadSignature):
		a.log.LogAttrs(ctx, slog.LevelWarn, "inbound event refused", slog.String("op", "inbound"), slog.String("remote", r.RemoteAddr), slog.Any("error", err))
		answer(w, http.StatusUnauthorized, InboundAnswer{Error: "unauthorized", Message: err.Error()})
		return
	case err != nil:
		answer(w, http.StatusBadRequest, InboundAnswer{Error: "invalid", Message: err.Error()})
		return
	}
	var ev InboundEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		answer(w, http.StatusBadRequest, InboundAnswer{Error: "invalid", Message: "the body is not an inbound event (a JSON object): " + err.Error()})
		return
	}
	if field, msg := validateInbound(ev); field != "" {
		answer(w, http.StatusBadRequest, InboundAnswer{Error: "invalid", Field: field, Message: msg})
		return
	}
	if _, ok, err := a.st.ticket(ev.TicketID); err != nil {
		a.log.LogAttrs(ctx, slog.LevelError, "cannot read ticket record", slog.String("ticket", ev.TicketID), slog.Any("error", err))
		answer(w, http.StatusInternalServerError, InboundAnswer{Error: "internal", Message: "cannot read the ticket's record; post the event again"})
		return
	} else if !ok {
		answer(w, http.StatusNotFound, InboundAnswer{Error: "unknown_ticket", Field: "ticket_id",
			Message: fmt.Sprintf("ticket_id %q names no ticket this bridge delivered; use the ticket_id of a ticket.created delivery", ev.TicketID)})
		return
	}
	if ev.Type == InboundStatus {
		if _, ok := a.status.Up(ev.Status); !ok {
			answer(w, http.StatusUnprocessableEntity, InboundAnswer{Error: "invalid", Field: "status",
				Message: fmt.Sprintf("status %q is not mapped to an upstream status; want one of %s", ev.Status, strings.Join(a.mappedStatuses(), ", "))})
			return
		}
	}
	seq, dup, err := a.st.addInbound(ev, now)
	switch {
	case errors.Is(err, errConflict):
		answer(w, http.StatusConflict, InboundAnswer{Error: "conflict", Field: "id",
			Message: fmt.Sprintf("event id %q was used before for a different event; give every event its own id", ev.ID)})
		return
	case err != nil:
		a.log.LogAttrs(ctx, slog.LevelError, "cannot store inbound event", slog.String("ticket", ev.TicketID), slog.String("event", ev.ID), slog.Any("error", err))
		answer(w, http.StatusInternalServerError, InboundAnswer{Error: "internal", Message: "the event could not be stored; post it again"})
		return
	}
	if !dup && ev.Type == InboundStatus {
		// The receiver holds this status now: the upstream change it causes
		// must not be delivered back as a status.changed.
		if _, err := a.modify(ctx, adapters.Ref(ev.TicketID), true, func(r *ticketRecord, exists bool) bool {
			r.Status = ev.Status
			return exists
		}); err != nil {
			a.log.LogAttrs(ctx, slog.LevelWarn, "cannot record the receiver's status", slog.String("ticket", ev.TicketID), slog.Any("error", err))
		}
	}
	a.log.LogAttrs(ctx, slog.LevelInfo, "inbound event accepted", slog.String("op", "inbound"), slog.String("ticket", ev.TicketID),
		slog.String("event", ev.ID), slog.String("type", ev.Type), slog.Bool("duplicate", dup))
	answer(w, http.StatusOK, InboundAnswer{OK: true, ID: ev.ID, Seq: seq, Duplicate: dup})
}

// validateInbound returns the first field at fault and what is wrong with
// it; field is "" for a valid event.
func validateInbound(ev InboundEvent) (field, msg string) {
	switch {
	case ev.ID == "":
		return "id", "id is required: the receiver's own id of the event, which makes posting it again harmless"
	case len(ev.ID) > MaxEventIDLen:
		return "id", fmt.Sprintf("id is %d bytes long; at most %d", len(ev.ID), MaxEventIDLen)
	case !printable(ev.ID):
		return "id", "id holds control characters or invalid UTF-8"
	case ev.Type == "":
		return "type", "type is required: reply, note or status"
	case ev.Type != InboundReply && ev.Type != InboundNote && ev.Type != InboundStatus:
		return "type", fmt.Sprintf("type %q is unknown: want reply, note or status", ev.Type)
	case strings.TrimSpace(ev.TicketID) == "":
		return "ticket_id", "ticket_id is required: the ticket_id of the ticket's deliveries"
	case len(ev.AuthorName) > MaxAuthorNameLen:
		return "author_name", fmt.Sprintf("author_name is %d bytes long; at most %d", len(ev.AuthorName), MaxAuthorNameLen)
	case !utf8.ValidString(ev.Body) || !utf8.ValidString(ev.AuthorName):
		return "body", "body and author_name must be valid UTF-8"
	}
	if ev.CreatedAt != "" {
		if _, err := time.Parse(time.RFC3339Nano, ev.CreatedAt); err != nil {
			return "created_at", fmt.Sprintf("created_at %q is not an RFC 3339 timestamp such as 2026-01-02T03:04:05Z", ev.CreatedAt)
		}
	}
	switch ev.Type {
	case InboundReply, InboundNote:
		if strings.TrimSpace(ev.Body) == "" {
			return "body", fmt.Sprintf("body is required for a %s and must not be blank", ev.Type)
		}
	case InboundStatus:
		if ev.Status == "" {
			return "status", "status is required for a status event"
		}
	}
	return "", ""
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

func (a *Adapter) mappedStatuses() []string {
	out := make([]string, 0, len(a.status.FromHelpdesk))
	for h := range a.status.FromHelpdesk {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

func answer(w http.ResponseWriter, status int, ans InboundAnswer) {
	b, _ := json.Marshal(ans)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
