package refserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

// Seed is the initial content of a server: organisations with their keys
// and tickets. Its JSON form is
//
//	{"organizations":[{"id":"…","product_type":"hotel",
//	  "keys":[{"name":"…","value":"rta_…","platform":"none|read|write|admin",
//	           "tickets":"none|read|write","expires_at":null}],
//	  "tickets":[{"id":"…","department":"…","status":"new","task_description":"…",
//	              "origin":"guest","guest_rating":null,"target_due_at":null,
//	              "comments":null,"created_at":"…","updated_at":"…",
//	              "messages":[{"id":"…","author_type":"guest","author_name":"…",
//	                           "body":"…","visible_to_guest":true,"created_at":"…"}]}]}]}
//
// Timestamps are RFC 3339 (the spec's form with microseconds and +00:00
// is one). [LoadSeed] refuses unknown fields and names the path of every
// error.
type Seed struct {
	Organizations []SeedOrganization
}

// KeyValue returns the value of key name of organisation org, and false
// when the seed has no such key.
func (s Seed) KeyValue(org, name string) (string, bool) {
	for _, o := range s.Organizations {
		if o.ID != org {
			continue
		}
		for _, k := range o.Keys {
			if k.Name == name {
				return k.Value, true
			}
		}
	}
	return "", false
}

// SeedOrganization is an organisation of a [Seed].
type SeedOrganization struct {
	ID          string
	ProductType string // hotel, short_term or long_term; "" means hotel
	Keys        []SeedKey
	Tickets     []SeedTicket
}

// SeedKey is a key of a [Seed], given with its value.
type SeedKey struct {
	Name      string
	Value     string // starts with rta_
	Platform  Platform
	Tickets   TicketRight
	ExpiresAt *time.Time // nil: unlimited; a past time makes an expired key
}

// String describes the key without its value.
func (k SeedKey) String() string {
	return fmt.Sprintf("SeedKey{name=%s platform=%s tickets=%s value=[redacted]}", k.Name, k.Platform, k.Tickets)
}

// GoString hides the value from %#v as well.
func (k SeedKey) GoString() string { return k.String() }

// SeedTicket is a ticket of a [Seed] with its thread.
type SeedTicket struct {
	ID              string
	Department      string
	Status          guestapi.Status // "" means new
	TaskDescription string
	Origin          guestapi.Origin // "" means guest
	GuestRating     *float64
	TargetDueAt     *time.Time
	Comments        *string
	CreatedAt       time.Time
	UpdatedAt       time.Time // zero means the latest of created_at and the messages' times
	Messages        []guestapi.Message
}

// jobj is a JSON object being read field by field, with its path for
// errors.
type jobj struct {
	path   string
	fields map[string]json.RawMessage
}

func readObj(path string, raw json.RawMessage, allowed ...string) (*jobj, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s: want a JSON object", path)
	}
	var unknown []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("%s.%s: unknown field (known: %s)", path, unknown[0], strings.Join(allowed, ", "))
	}
	return &jobj{path: path, fields: m}, nil
}

func (o *jobj) has(name string) bool {
	v, ok := o.fields[name]
	return ok && string(bytes.TrimSpace(v)) != "null"
}

func (o *jobj) str(name string, required bool) (string, error) {
	if !o.has(name) {
		if required {
			return "", fmt.Errorf("%s.%s: missing", o.path, name)
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(o.fields[name], &s); err != nil {
		return "", fmt.Errorf("%s.%s: want a string", o.path, name)
	}
	if required && strings.TrimSpace(s) == "" {
		return "", fmt.Errorf("%s.%s: empty", o.path, name)
	}
	return s, nil
}

func (o *jobj) optStr(name string) (*string, error) {
	if !o.has(name) {
		return nil, nil
	}
	s, err := o.str(name, false)
	return &s, err
}

func (o *jobj) boolean(name string) (bool, error) {
	if !o.has(name) {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(o.fields[name], &b); err != nil {
		return false, fmt.Errorf("%s.%s: want true or false", o.path, name)
	}
	return b, nil
}

func (o *jobj) number(name string) (*float64, error) {
	if !o.has(name) {
		return nil, nil
	}
	var f float64
	if err := json.Unmarshal(o.fields[name], &f); err != nil {
		return nil, fmt.Errorf("%s.%s: want a number or null", o.path, name)
	}
	return &f, nil
}

func (o *jobj) time(name string, required bool) (*time.Time, error) {
	s, err := o.str(name, required)
	if err != nil || (!required && !o.has(name)) {
		return nil, err
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, fmt.Errorf("%s.%s: %q is not an RFC 3339 timestamp such as 2026-01-02T03:04:05.000000+00:00", o.path, name, s)
	}
	t = t.UTC()
	return &t, nil
}

func (o *jobj) array(name string) ([]json.RawMessage, error) {
	if !o.has(name) {
		return nil, nil
	}
	var a []json.RawMessage
	if err := json.Unmarshal(o.fields[name], &a); err != nil {
		return nil, fmt.Errorf("%s.%s: want an array", o.path, name)
	}
	return a, nil
}

// LoadSeed reads a seed in its JSON form and checks it. Every error names
// the path of the offending value, e.g.
// organizations[0].tickets[2].created_at.
func LoadSeed(r io.Reader) (Seed, error) {
	var raw json.RawMessage
	dec := json.NewDecoder(r)
	if err := dec.Decode(&raw); err != nil {
		return Seed{}, fmt.Errorf("load seed: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Seed{}, fmt.Errorf("load seed: data after the JSON object")
	}
	seed, err := parseSeed(raw)
	if err != nil {
		return Seed{}, fmt.Errorf("load seed: %w", err)
	}
	if err := seed.check(nil); err != nil {
		return Seed{}, fmt.Errorf("load seed: %w", err)
	}
	return seed, nil
}

func parseSeed(raw json.RawMessage) (Seed, error) {
	var seed Seed
	top, err := readObj("seed", raw, "organizations")
	if err != nil {
		return seed, err
	}
	orgs, err := top.array("organizations")
	if err != nil {
		return seed, err
	}
	for i, ro := range orgs {
		o, err := readObj(fmt.Sprintf("organizations[%d]", i), ro, "id", "product_type", "keys", "tickets")
		if err != nil {
			return seed, err
		}
		var so SeedOrganization
		if so.ID, err = o.str("id", true); err != nil {
			return seed, err
		}
		if so.ProductType, err = o.str("product_type", false); err != nil {
			return seed, err
		}
		keys, err := o.array("keys")
		if err != nil {
			return seed, err
		}
		for j, rk := range keys {
			k, err := readObj(fmt.Sprintf("%s.keys[%d]", o.path, j), rk, "name", "value", "platform", "tickets", "expires_at")
			if err != nil {
				return seed, err
			}
			var sk SeedKey
			var p, t string
			if sk.Name, err = k.str("name", true); err != nil {
				return seed, err
			}
			if sk.Value, err = k.str("value", true); err != nil {
				return seed, err
			}
			if p, err = k.str("platform", false); err != nil {
				return seed, err
			}
			if t, err = k.str("tickets", false); err != nil {
				return seed, err
			}
			sk.Platform, sk.Tickets = Platform(p), TicketRight(t)
			if sk.ExpiresAt, err = k.time("expires_at", false); err != nil {
				return seed, err
			}
			so.Keys = append(so.Keys, sk)
		}
		tickets, err := o.array("tickets")
		if err != nil {
			return seed, err
		}
		for j, rt := range tickets {
			st, err := parseSeedTicket(fmt.Sprintf("%s.tickets[%d]", o.path, j), rt)
			if err != nil {
				return seed, err
			}
			so.Tickets = append(so.Tickets, st)
		}
		seed.Organizations = append(seed.Organizations, so)
	}
	return seed, nil
}

func parseSeedTicket(path string, raw json.RawMessage) (SeedTicket, error) {
	var st SeedTicket
	t, err := readObj(path, raw, "id", "department", "status", "task_description", "origin", "guest_rating",
		"target_due_at", "comments", "created_at", "updated_at", "messages")
	if err != nil {
		return st, err
	}
	var s string
	if st.ID, err = t.str("id", true); err != nil {
		return st, err
	}
	if st.Department, err = t.str("department", true); err != nil {
		return st, err
	}
	if s, err = t.str("status", false); err != nil {
		return st, err
	}
	st.Status = guestapi.Status(s)
	if st.TaskDescription, err = t.str("task_description", true); err != nil {
		return st, err
	}
	if s, err = t.str("origin", false); err != nil {
		return st, err
	}
	st.Origin = guestapi.Origin(s)
	if st.GuestRating, err = t.number("guest_rating"); err != nil {
		return st, err
	}
	if st.TargetDueAt, err = t.time("target_due_at", false); err != nil {
		return st, err
	}
	if st.Comments, err = t.optStr("comments"); err != nil {
		return st, err
	}
	created, err := t.time("created_at", true)
	if err != nil {
		return st, err
	}
	st.CreatedAt = *created
	updated, err := t.time("updated_at", false)
	if err != nil {
		return st, err
	}
	if updated != nil {
		st.UpdatedAt = *updated
	}
	msgs, err := t.array("messages")
	if err != nil {
		return st, err
	}
	for k, rm := range msgs {
		m, err := readObj(fmt.Sprintf("%s.messages[%d]", path, k), rm, "id", "author_type", "author_name", "body", "visible_to_guest", "created_at")
		if err != nil {
			return st, err
		}
		var msg guestapi.Message
		if msg.ID, err = m.str("id", true); err != nil {
			return st, err
		}
		if s, err = m.str("author_type", true); err != nil {
			return st, err
		}
		msg.AuthorType = guestapi.AuthorType(s)
		if msg.AuthorName, err = m.str("author_name", false); err != nil {
			return st, err
		}
		if msg.Body, err = m.str("body", true); err != nil {
			return st, err
		}
		if msg.VisibleToGuest, err = m.boolean("visible_to_guest"); err != nil {
			return st, err
		}
		at, err := m.time("created_at", true)
		if err != nil {
			return st, err
		}
		msg.CreatedAt = *at
		st.Messages = append(st.Messages, msg)
	}
	return st, nil
}

// check validates the seed on its own and against the store st (nil: an
// empty one; caller holds its lock).
func (seed Seed) check(st *store) error {
	orgIDs, ticketIDs, msgIDs, keyValues := map[string]string{}, map[string]string{}, map[string]string{}, map[string]string{}
	if st != nil {
		for id := range st.orgs {
			orgIDs[id] = "an existing organization"
		}
		for id := range st.tickets {
			ticketIDs[id] = "an existing ticket"
		}
		for id := range st.msgIDs {
			msgIDs[id] = "an existing message"
		}
	}
	for i, o := range seed.Organizations {
		p := fmt.Sprintf("organizations[%d]", i)
		if strings.TrimSpace(o.ID) == "" {
			return fmt.Errorf("%s.id: empty", p)
		}
		if prev, ok := orgIDs[o.ID]; ok {
			return fmt.Errorf("%s.id: duplicate id %q (also %s)", p, o.ID, prev)
		}
		orgIDs[o.ID] = p
		if o.ProductType != "" && !slices.Contains(productTypes, o.ProductType) {
			return fmt.Errorf("%s.product_type: %q is not one of %s", p, o.ProductType, strings.Join(productTypes, ", "))
		}
		names := map[string]bool{}
		for j, k := range o.Keys {
			kp := fmt.Sprintf("%s.keys[%d]", p, j)
			if strings.TrimSpace(k.Name) == "" {
				return fmt.Errorf("%s.name: empty", kp)
			}
			if names[k.Name] {
				return fmt.Errorf("%s.name: duplicate key name %q in the organization", kp, k.Name)
			}
			names[k.Name] = true
			if !strings.HasPrefix(k.Value, KeyPrefix) || len(k.Value) <= len(KeyPrefix) {
				return fmt.Errorf("%s.value: an API key starts with %s and has more after it", kp, KeyPrefix)
			}
			if prev, ok := keyValues[k.Value]; ok {
				return fmt.Errorf("%s.value: the same value as %s", kp, prev)
			}
			if st != nil && st.findKey(k.Value) != nil {
				return fmt.Errorf("%s.value: the same value as an existing key", kp)
			}
			keyValues[k.Value] = kp
			if k.Platform != "" && !k.Platform.valid() {
				return fmt.Errorf("%s.platform: %q is not one of none, read, write, admin", kp, k.Platform)
			}
			if k.Tickets != "" && !k.Tickets.valid() {
				return fmt.Errorf("%s.tickets: %q is not one of none, read, write", kp, k.Tickets)
			}
		}
		for j, t := range o.Tickets {
			tp := fmt.Sprintf("%s.tickets[%d]", p, j)
			if !isUUID(t.ID) {
				return fmt.Errorf("%s.id: %q is not a UUID", tp, t.ID)
			}
			if prev, ok := ticketIDs[t.ID]; ok {
				return fmt.Errorf("%s.id: duplicate id %q (also %s)", tp, t.ID, prev)
			}
			ticketIDs[t.ID] = tp
			if strings.TrimSpace(t.Department) == "" {
				return fmt.Errorf("%s.department: empty", tp)
			}
			if t.Status != "" && !t.Status.Known() {
				return fmt.Errorf("%s.status: %q is not one of %s", tp, t.Status, joinStatuses(guestapi.Statuses()))
			}
			if strings.TrimSpace(t.TaskDescription) == "" {
				return fmt.Errorf("%s.task_description: empty", tp)
			}
			switch t.Origin {
			case "", guestapi.OriginGuest, guestapi.OriginStaff, guestapi.OriginInternal:
			default:
				return fmt.Errorf("%s.origin: %q is not one of guest, staff, internal", tp, t.Origin)
			}
			if err := checkRating(t.GuestRating); err != nil {
				return fmt.Errorf("%s.guest_rating: %v is not a number from 0 to 10", tp, *t.GuestRating)
			}
			if t.CreatedAt.IsZero() {
				return fmt.Errorf("%s.created_at: missing", tp)
			}
			if !t.UpdatedAt.IsZero() && t.UpdatedAt.Before(t.CreatedAt) {
				return fmt.Errorf("%s.updated_at: before created_at", tp)
			}
			for k, m := range t.Messages {
				mp := fmt.Sprintf("%s.messages[%d]", tp, k)
				if !isUUID(m.ID) {
					return fmt.Errorf("%s.id: %q is not a UUID", mp, m.ID)
				}
				if prev, ok := msgIDs[m.ID]; ok {
					return fmt.Errorf("%s.id: duplicate id %q (also %s)", mp, m.ID, prev)
				}
				msgIDs[m.ID] = mp
				if !m.AuthorType.Known() {
					return fmt.Errorf("%s.author_type: %q is not one of guest, staff, ai, system", mp, m.AuthorType)
				}
				if strings.TrimSpace(m.Body) == "" {
					return fmt.Errorf("%s.body: empty", mp)
				}
				if m.CreatedAt.IsZero() {
					return fmt.Errorf("%s.created_at: missing", mp)
				}
			}
		}
	}
	return nil
}

// ApplySeed adds the seed's organisations, keys and tickets to the server.
// It checks everything first, also against what the server holds, and adds
// nothing when anything is wrong.
func (s *Server) ApplySeed(seed Seed) error {
	now := s.nowUTC()
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if err := seed.check(&s.st); err != nil {
		return fmt.Errorf("apply seed: %w", err)
	}
	for _, o := range seed.Organizations {
		pt := o.ProductType
		if pt == "" {
			pt = "hotel"
		}
		s.st.addOrg(o.ID, pt)
		for _, k := range o.Keys {
			p, tr := k.Platform, k.Tickets
			if p == "" {
				p = PlatformNone
			}
			if tr == "" {
				tr = TicketsNone
			}
			if err := s.st.addKey(o.ID, k.Name, k.Value, p, tr, now, utcPtr(k.ExpiresAt)); err != nil {
				return fmt.Errorf("apply seed: %w", err) // unreachable after check
			}
		}
		for _, st := range o.Tickets {
			t := &ticket{org: o.ID, id: st.ID, department: st.Department, status: st.Status, description: st.TaskDescription,
				origin: st.Origin, rating: clonePtr(st.GuestRating), due: utcPtr(st.TargetDueAt), comments: clonePtr(st.Comments),
				created: st.CreatedAt.UTC().Truncate(time.Microsecond)}
			if t.status == "" {
				t.status = guestapi.StatusNew
			}
			if t.origin == "" {
				t.origin = guestapi.OriginGuest
			}
			t.updated = t.created
			for _, m := range st.Messages {
				m.CreatedAt = m.CreatedAt.UTC().Truncate(time.Microsecond)
				if strings.TrimSpace(m.AuthorName) == "" {
					m.AuthorName = defaultAuthorName(m.AuthorType)
				}
				s.st.appendMessage(t, InternalMessage{Message: m, Source: SourceSeed})
			}
			if !st.UpdatedAt.IsZero() {
				t.updated = st.UpdatedAt.UTC().Truncate(time.Microsecond)
			}
			s.st.insertTicket(t)
		}
	}
	s.log.Info("seed applied", slog.Int("organizations", len(seed.Organizations)))
	return nil
}
