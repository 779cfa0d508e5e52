package refserver

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

// The console's JSON forms. Timestamps are in the spec's form.

func fmtTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := guestapi.FormatTime(*t)
	return &s
}

type ticketViewWire struct {
	Organization    string          `json:"organization"`
	ID              string          `json:"id"`
	Department      string          `json:"department"`
	Status          guestapi.Status `json:"status"`
	TaskDescription string          `json:"task_description"`
	Origin          guestapi.Origin `json:"origin"`
	GuestRating     *float64        `json:"guest_rating"`
	TargetDueAt     *string         `json:"target_due_at"`
	Comments        *string         `json:"comments"`
	CreatedAt       string          `json:"created_at"`
	UpdatedAt       string          `json:"updated_at"`
}

// MarshalJSON writes every field of the ticket, timestamps in the spec's form.
func (v TicketView) MarshalJSON() ([]byte, error) {
	return json.Marshal(ticketViewWire{v.Organization, v.ID, v.Department, v.Status, v.TaskDescription, v.Origin,
		v.GuestRating, fmtTimePtr(v.TargetDueAt), v.Comments, guestapi.FormatTime(v.CreatedAt), guestapi.FormatTime(v.UpdatedAt)})
}

// MarshalJSON writes the message with its source and external flag.
func (m InternalMessage) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		ID             string              `json:"id"`
		AuthorType     guestapi.AuthorType `json:"author_type"`
		AuthorName     string              `json:"author_name"`
		Body           string              `json:"body"`
		VisibleToGuest bool                `json:"visible_to_guest"`
		CreatedAt      string              `json:"created_at"`
		Source         string              `json:"source"`
		External       bool                `json:"external"`
	}{m.ID, m.AuthorType, m.AuthorName, m.Body, m.VisibleToGuest, guestapi.FormatTime(m.CreatedAt), m.Source, m.External})
}

// MarshalJSON writes the operation, its time in the spec's form.
func (o Operation) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		At       string `json:"at"`
		Op       string `json:"op"`
		From     string `json:"from"`
		To       string `json:"to"`
		Source   string `json:"source"`
		External bool   `json:"external"`
	}{guestapi.FormatTime(o.At), o.Op, o.From, o.To, o.Source, o.External})
}

// MarshalJSON writes the internal view: ticket, messages, operations and
// guest_view.
func (v InternalView) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Ticket     TicketView        `json:"ticket"`
		Messages   []InternalMessage `json:"messages"`
		Operations []Operation       `json:"operations"`
		GuestView  struct {
			Status   guestapi.Status    `json:"status"`
			Messages []guestapi.Message `json:"messages"`
		} `json:"guest_view"`
	}{Ticket: v.Ticket, Messages: v.Messages, Operations: v.Operations, GuestView: struct {
		Status   guestapi.Status    `json:"status"`
		Messages []guestapi.Message `json:"messages"`
	}{v.GuestView.Status, v.GuestView.Messages}})
}

// MarshalJSON writes the issued key with its expiry in the spec's form.
func (k IssuedKey) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Organization string      `json:"organization"`
		Name         string      `json:"name"`
		Value        string      `json:"value"`
		Platform     Platform    `json:"platform"`
		Tickets      TicketRight `json:"tickets"`
		ExpiresAt    *string     `json:"expires_at"`
	}{k.Organization, k.Name, k.Value, k.Platform, k.Tickets, fmtTimePtr(k.ExpiresAt)})
}

// String describes the key without its value.
func (k IssuedKey) String() string {
	return fmt.Sprintf("IssuedKey{organization=%s name=%s platform=%s tickets=%s value=[redacted]}", k.Organization, k.Name, k.Platform, k.Tickets)
}

// GoString hides the value from %#v as well.
func (k IssuedKey) GoString() string { return k.String() }

// MarshalJSON writes a row of the key table.
func (k KeyInfo) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Organization string      `json:"organization"`
		Name         string      `json:"name"`
		Prefix       string      `json:"prefix"`
		Platform     Platform    `json:"platform"`
		Tickets      TicketRight `json:"tickets"`
		CreatedAt    string      `json:"created_at"`
		ExpiresAt    *string     `json:"expires_at"`
		LastUsedAt   *string     `json:"last_used_at"`
	}{k.Organization, k.Name, k.Prefix, k.Platform, k.Tickets, guestapi.FormatTime(k.CreatedAt), fmtTimePtr(k.ExpiresAt), fmtTimePtr(k.LastUsedAt)})
}

// serveConsole answers /console/v1 for the holder of the console token.
func (s *Server) serveConsole(w http.ResponseWriter, r *http.Request) {
	cred, ok := bearer(r)
	if !ok || subtle.ConstantTimeCompare([]byte(cred), []byte(s.consoleToken)) != 1 {
		unauthorized("send the console token as Authorization: Bearer <token>").write(w)
		return
	}
	var body []byte
	if r.Method == http.MethodPost || r.Method == http.MethodPut {
		b, bad := s.readBody(w, r)
		if bad != nil {
			bad.write(w)
			return
		}
		if bad := checkContentType(r, b); bad != nil {
			bad.write(w)
			return
		}
		body = b
	}
	s.console(r, body).write(w)
}

// consoleError maps an error of a console method to an answer.
func consoleError(err error) response {
	switch {
	case errors.Is(err, ErrNotFound):
		return notFound(err.Error())
	case errors.Is(err, ErrConflict):
		return errorResponse(http.StatusConflict, "conflict", err.Error())
	}
	return badRequest("%s", err.Error())
}

// decodeStrict decodes a console body, refusing unknown fields.
func decodeStrict(body []byte, v any) *response {
	if len(bytes.TrimSpace(body)) == 0 {
		r := badRequest("request body is empty; send a JSON object")
		return &r
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		r := badRequest("decode request body: %v", err)
		return &r
	}
	if dec.More() {
		r := badRequest("decode request body: data after the JSON object")
		return &r
	}
	return nil
}

func parseOptTime(field string, s *string) (*time.Time, error) {
	if s == nil {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %q is not an RFC 3339 timestamp", ErrInvalid, field, *s)
	}
	return &t, nil
}

func (s *Server) console(r *http.Request, body []byte) response {
	segs := strings.Split(strings.TrimPrefix(r.URL.Path, ConsolePath), "/")[1:]
	route := strings.Join(segs, "/")
	if len(segs) >= 2 && (segs[0] == "tickets" || segs[0] == "keys") {
		route = segs[0] + "/{id}"
		if len(segs) > 2 {
			route += "/" + strings.Join(segs[2:], "/")
		}
		if segs[1] == "" {
			route = "{unknown}"
		}
	}
	method := r.Method
	allow := func(m string) (response, bool) {
		if method != m {
			return methodNotAllowed(method, m), false
		}
		return response{}, true
	}
	switch route {
	case "organizations":
		if resp, ok := allow(http.MethodPost); !ok {
			return resp
		}
		var req struct {
			ID          string `json:"id"`
			ProductType string `json:"product_type"`
		}
		if bad := decodeStrict(body, &req); bad != nil {
			return *bad
		}
		if req.ProductType == "" {
			req.ProductType = "hotel"
		}
		if err := s.AddOrganization(req.ID, req.ProductType); err != nil {
			return consoleError(err)
		}
		return jsonResponse(http.StatusCreated, map[string]string{"id": req.ID, "product_type": req.ProductType})
	case "tickets":
		switch method {
		case http.MethodGet:
			org := r.URL.Query().Get("organization")
			if org == "" {
				return badRequest("organization is missing: ?organization=ID")
			}
			ts := s.Tickets(org)
			if ts == nil {
				ts = []TicketView{}
			}
			return jsonResponse(http.StatusOK, map[string]any{"tickets": ts})
		case http.MethodPost:
			return s.consoleCreateTicket(body)
		}
		return methodNotAllowed(method, "GET, POST")
	case "tickets/{id}":
		switch method {
		case http.MethodGet:
		case http.MethodDelete:
			if err := s.DeleteTicket(segs[1]); err != nil {
				return consoleError(err)
			}
			return jsonResponse(http.StatusOK, map[string]any{"deleted": true, "id": segs[1]})
		default:
			return methodNotAllowed(method, "GET, DELETE")
		}
		v, err := s.Ticket(segs[1])
		if err != nil {
			return consoleError(err)
		}
		return jsonResponse(http.StatusOK, v)
	case "tickets/{id}/messages":
		if resp, ok := allow(http.MethodPost); !ok {
			return resp
		}
		var req struct {
			AuthorType     guestapi.AuthorType `json:"author_type"`
			AuthorName     string              `json:"author_name"`
			Body           string              `json:"body"`
			VisibleToGuest *bool               `json:"visible_to_guest"`
			CreatedAt      *string             `json:"created_at"`
		}
		if bad := decodeStrict(body, &req); bad != nil {
			return *bad
		}
		at, err := parseOptTime("created_at", req.CreatedAt)
		if err != nil {
			return consoleError(err)
		}
		cm := ConsoleMessage{AuthorType: req.AuthorType, AuthorName: req.AuthorName, Body: req.Body, VisibleToGuest: req.VisibleToGuest}
		if at != nil {
			cm.CreatedAt = *at
		}
		m, err := s.AddMessage(segs[1], cm)
		if err != nil {
			return consoleError(err)
		}
		return jsonResponse(http.StatusCreated, m)
	case "tickets/{id}/status":
		if resp, ok := allow(http.MethodPost); !ok {
			return resp
		}
		var req struct {
			Status guestapi.Status `json:"status"`
		}
		if bad := decodeStrict(body, &req); bad != nil {
			return *bad
		}
		if err := s.SetStatus(segs[1], req.Status); err != nil {
			return consoleError(err)
		}
		return s.consoleTicket(segs[1])
	case "tickets/{id}/rating":
		if resp, ok := allow(http.MethodPost); !ok {
			return resp
		}
		var req struct {
			GuestRating *float64 `json:"guest_rating"`
		}
		if bad := decodeStrict(body, &req); bad != nil {
			return *bad
		}
		if err := s.RateTicket(segs[1], req.GuestRating); err != nil {
			return consoleError(err)
		}
		return s.consoleTicket(segs[1])
	case "tickets/{id}/fields":
		if resp, ok := allow(http.MethodPost); !ok {
			return resp
		}
		return s.consoleFields(segs[1], body)
	case "keys":
		switch method {
		case http.MethodGet:
			keys, err := s.Keys(r.URL.Query().Get("organization"))
			if err != nil {
				return consoleError(err)
			}
			return jsonResponse(http.StatusOK, map[string]any{"keys": keys})
		case http.MethodPost:
			var req struct {
				Organization string      `json:"organization"`
				Name         string      `json:"name"`
				Platform     Platform    `json:"platform"`
				Tickets      TicketRight `json:"tickets"`
				ValidityDays int         `json:"validity_days"`
			}
			if bad := decodeStrict(body, &req); bad != nil {
				return *bad
			}
			k, err := s.IssueKey(req.Organization, KeySpec{Name: req.Name, Platform: req.Platform, Tickets: req.Tickets, ValidityDays: req.ValidityDays})
			if err != nil {
				return consoleError(err)
			}
			return jsonResponse(http.StatusCreated, k)
		}
		return methodNotAllowed(method, "GET, POST")
	case "keys/{id}":
		if resp, ok := allow(http.MethodDelete); !ok {
			return resp
		}
		org := r.URL.Query().Get("organization")
		if org == "" {
			return badRequest("organization is missing: ?organization=ID")
		}
		if err := s.RevokeKey(org, segs[1]); err != nil {
			return consoleError(err)
		}
		return jsonResponse(http.StatusOK, map[string]any{"revoked": true, "organization": org, "name": segs[1]})
	case "faults":
		switch method {
		case http.MethodGet:
			return jsonResponse(http.StatusOK, faultsToWire(s.Faults()))
		case http.MethodPut:
			var req faultsWire
			if bad := decodeStrict(body, &req); bad != nil {
				return *bad
			}
			fl, err := req.faults()
			if err == nil {
				fl.Hook = s.Faults().Hook
				err = s.SetFaults(fl)
			}
			if err != nil {
				return badRequest("%s", err.Error())
			}
			return jsonResponse(http.StatusOK, faultsToWire(fl))
		}
		return methodNotAllowed(method, "GET, PUT")
	case "stats":
		if resp, ok := allow(http.MethodGet); !ok {
			return resp
		}
		return jsonResponse(http.StatusOK, s.Stats())
	}
	return notFound(fmt.Sprintf("no console endpoint at %s", r.URL.Path))
}

func (s *Server) consoleTicket(id string) response {
	v, err := s.Ticket(id)
	if err != nil {
		return consoleError(err)
	}
	return jsonResponse(http.StatusOK, v.Ticket)
}

func (s *Server) consoleCreateTicket(body []byte) response {
	var req struct {
		Organization    string          `json:"organization"`
		ID              string          `json:"id"`
		Department      string          `json:"department"`
		Status          guestapi.Status `json:"status"`
		TaskDescription string          `json:"task_description"`
		Origin          guestapi.Origin `json:"origin"`
		GuestRating     *float64        `json:"guest_rating"`
		TargetDueAt     *string         `json:"target_due_at"`
		Comments        *string         `json:"comments"`
		CreatedAt       *string         `json:"created_at"`
	}
	if bad := decodeStrict(body, &req); bad != nil {
		return *bad
	}
	if req.Organization == "" {
		return badRequest("organization is missing")
	}
	due, err := parseOptTime("target_due_at", req.TargetDueAt)
	if err != nil {
		return consoleError(err)
	}
	created, err := parseOptTime("created_at", req.CreatedAt)
	if err != nil {
		return consoleError(err)
	}
	nt := NewTicket{ID: req.ID, Department: req.Department, Status: req.Status, TaskDescription: req.TaskDescription,
		Origin: req.Origin, GuestRating: req.GuestRating, TargetDueAt: due, Comments: req.Comments}
	if created != nil {
		nt.CreatedAt = *created
	}
	v, err := s.CreateTicket(req.Organization, nt)
	if err != nil {
		return consoleError(err)
	}
	return jsonResponse(http.StatusCreated, v)
}

// faultsWire is the console's form of [Faults]: durations as Go duration
// strings ("250ms"), the hook left out.
type faultsWire struct {
	Seed           uint64  `json:"seed"`
	Latency        string  `json:"latency"`
	LatencyRate    float64 `json:"latency_rate"`
	ErrorRate      float64 `json:"error_rate"`
	RateLimitRate  float64 `json:"rate_limit_rate"`
	RetryAfter     string  `json:"retry_after"`
	DropRate       float64 `json:"drop_rate"`
	LostAnswerRate float64 `json:"lost_answer_rate"`
	SlowBodyRate   float64 `json:"slow_body_rate"`
	SlowBodyDelay  string  `json:"slow_body_delay"`
}

func faultsToWire(f Faults) faultsWire {
	return faultsWire{f.Seed, f.Latency.String(), f.LatencyRate, f.ErrorRate, f.RateLimitRate, f.RetryAfter.String(),
		f.DropRate, f.LostAnswerRate, f.SlowBodyRate, f.SlowBodyDelay.String()}
}

func (w faultsWire) faults() (Faults, error) {
	f := Faults{Seed: w.Seed, LatencyRate: w.LatencyRate, ErrorRate: w.ErrorRate, RateLimitRate: w.RateLimitRate,
		DropRate: w.DropRate, LostAnswerRate: w.LostAnswerRate, SlowBodyRate: w.SlowBodyRate}
	for _, d := range []struct {
		name string
		s    string
		to   *time.Duration
	}{{"latency", w.Latency, &f.Latency}, {"retry_after", w.RetryAfter, &f.RetryAfter}, {"slow_body_delay", w.SlowBodyDelay, &f.SlowBodyDelay}} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil {
			return Faults{}, fmt.Errorf("%s %q is not a duration such as 250ms", d.name, d.s)
		}
		*d.to = v
	}
	return f, nil
}
