package sync

// This file keeps a copied state from writing to guests by accident. The
// state remembers what it serves (Serves: the API's address, a fingerprint
// of the key, the helpdesk); a start against another API or helpdesk is
// held, writing nothing on either side, until an operator confirms the
// move (ConfirmMove, `ticketbridge confirm-move`) or allows it
// (TICKETBRIDGE_ALLOW_MOVE). A new key on the same API is the documented
// key rotation: it is taken once a request the state knows reads 200
// with it, and held when none does (another organisation's key).

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/redact"
	"github.com/ticketbridge/ticketbridge/state"
)

// MetaServes is the meta key of what the state serves ([Serves], in
// JSON). A state without it (a new one, or one an older ticketbridge
// wrote) records it at the next start.
const MetaServes = "serves"

// Serves is what a hotel's state was synced with. Nothing in it is a
// secret, nor the name of the machine: a replica that takes the hotel
// over, or a container started anew, serves the same.
type Serves struct {
	// API is the Guest Requests API's base URL as redact.Place gives it:
	// no credentials, query or fragment.
	API string `json:"api"`
	// Key is the API key's fingerprint ([KeyFingerprint]), never the key.
	Key string `json:"key,omitempty"`
	// Helpdesk is adapters.HelpdeskIdentity: the adapter's name and where
	// its helpdesk is.
	Helpdesk string `json:"helpdesk"`
}

// ServesOf returns what a hotel serves with the API at apiURL, the key of
// fingerprint keyPrint ([KeyFingerprint]) and the helpdesk hd.
func ServesOf(apiURL, keyPrint string, hd adapters.Helpdesk) Serves {
	return Serves{API: redact.Place(apiURL), Key: keyPrint, Helpdesk: adapters.HelpdeskIdentity(hd)}
}

// KeyFingerprint returns a fingerprint of an API key that tells two keys
// apart and gives nothing of the key away: the first 12 hex digits of an
// HMAC-SHA256 of it.
func KeyFingerprint(key string) string {
	if key == "" {
		return ""
	}
	m := hmac.New(sha256.New, []byte("ticketbridge API key fingerprint"))
	m.Write([]byte(key))
	return hex.EncodeToString(m.Sum(nil))[:12]
}

// location is the helpdesk's place in an identity, without the adapter's
// name: what confirm-move --helpdesk names.
func location(identity string) string {
	_, at, found := strings.Cut(identity, " ")
	if !found {
		return identity
	}
	return at
}

// Moves says which parts of what the state serves changed, or may change:
// the API, the helpdesk, the key's organisation.
type Moves struct {
	API, Helpdesk, Key bool
}

// Any reports whether m names any part.
func (m Moves) Any() bool { return m.API || m.Helpdesk || m.Key }

// String lists the parts m names, as TICKETBRIDGE_ALLOW_MOVE does.
func (m Moves) String() string {
	var parts []string
	for _, p := range []struct {
		on   bool
		name string
	}{{m.API, "api"}, {m.Helpdesk, "helpdesk"}, {m.Key, "key"}} {
		if p.on {
			parts = append(parts, p.name)
		}
	}
	return strings.Join(parts, ",")
}

// EnvDecode parses TICKETBRIDGE_ALLOW_MOVE: a comma-separated list of
// api, helpdesk and key.
func (m *Moves) EnvDecode(v string) error {
	*m = Moves{}
	for item := range strings.SplitSeq(v, ",") {
		switch strings.ToLower(strings.TrimSpace(item)) {
		case "":
		case "api":
			m.API = true
		case "helpdesk":
			m.Helpdesk = true
		case "key":
			m.Key = true
		default:
			return fmt.Errorf("TICKETBRIDGE_ALLOW_MOVE=%q: %q is not api, helpdesk or key", v, strings.TrimSpace(item))
		}
	}
	return nil
}

// ErrMoved is matched by the error of a cycle held because the state was
// synced with another API, helpdesk or organisation than the
// configuration names: a copied or restored state started elsewhere, or a
// move nobody confirmed. The error is a *[MovedError] saying what changed
// and the command that confirms it.
var ErrMoved = errors.New("held: the state was synced with another API or helpdesk")

// MovedError is the error of a hold: what the state serves (Was), what the
// configuration names (Now), and what changed without being allowed.
type MovedError struct {
	Was, Now Serves
	Moved    Moves
	// Read is how many requests the state knows that the new key was
	// refused (404) when Moved.Key.
	Read int
	// Hotel is the hotel's name; "" for a daemon of one.
	Hotel string
}

// Is reports whether target is [ErrMoved].
func (e *MovedError) Is(target error) bool { return target == ErrMoved }

func (e *MovedError) Error() string {
	var what []string
	if e.Moved.Helpdesk {
		what = append(what, fmt.Sprintf("helpdesk %s → %s", e.Was.Helpdesk, e.Now.Helpdesk))
	}
	if e.Moved.API {
		what = append(what, fmt.Sprintf("API %s → %s", e.Was.API, e.Now.API))
	}
	if e.Moved.Key {
		what = append(what, fmt.Sprintf("API key %s → %s, which reads none of the %d requests of the state that it asked for (404: another organisation's key)", e.Was.Key, e.Now.Key, e.Read))
	}
	return fmt.Sprintf("%s, and writes nothing to either until the move is confirmed: %s; to confirm it, run %s", ErrMoved, strings.Join(what, "; "), e.Command())
}

// Command is the command that confirms the move, naming each part that
// changed with its new value.
func (e *MovedError) Command() string {
	cmd := "ticketbridge confirm-move"
	if e.Hotel != "" && e.Hotel != state.DefaultHotel {
		cmd += " --hotel " + e.Hotel
	}
	if e.Moved.Helpdesk {
		cmd += " --helpdesk " + shellQuote(location(e.Now.Helpdesk))
	}
	if e.Moved.API {
		cmd += " --api " + shellQuote(e.Now.API)
	}
	if e.Moved.Key {
		cmd += " --key " + e.Now.Key
	}
	return cmd
}

// shellQuote quotes s for a POSIX shell when it holds more than letters,
// digits and /._:@-.
func shellQuote(s string) string {
	plain := s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._:@-", r))
	})
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// probeTickets is how many requests the state knows a new key is asked
// to read: one read 200 proves the organisation; a request deleted since
// reads 404 with the right key too, hence more than one.
const probeTickets = 3

// servesFacts is what the check of what the state serves reads of it.
type servesFacts struct {
	was     Serves
	ok      bool     // was is recorded
	tickets int      // how many requests the state knows
	probe   []string // the requests a new key is asked for, newest first
}

// readServes reads what the state serves and, unless it is same (nil:
// whatever it is), the requests it knows: a state that serves what the
// configuration names is not scanned at each start.
func readServes(tx *state.Tx, same *Serves) (servesFacts, error) {
	var f servesFacts
	raw, ok, err := tx.Meta(MetaServes)
	if err != nil {
		return f, err
	}
	if ok {
		if err := json.Unmarshal([]byte(raw), &f.was); err != nil {
			return f, &state.RecordError{Bucket: "meta", Key: MetaServes, Err: err}
		}
		f.ok = true
	}
	if same != nil && f.ok && f.was == *same {
		return f, nil
	}
	var known []state.Ticket
	err = tx.ForEachTicket(func(t state.Ticket) error {
		f.tickets++
		if t.Deleted.IsZero() && t.Missing == 0 {
			known = append(known, t)
		}
		return nil
	})
	if err != nil {
		return f, err
	}
	slices.SortFunc(known, func(a, b state.Ticket) int {
		return cmp.Or(b.UpstreamUpdatedAt.Compare(a.UpstreamUpdatedAt), strings.Compare(a.ID, b.ID))
	})
	for _, t := range known[:min(len(known), probeTickets)] {
		f.probe = append(f.probe, t.ID)
	}
	return f, nil
}

func writeServes(tx *state.Tx, s Serves) error {
	body, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return tx.SetMeta(MetaServes, string(body))
}

// ReadServes returns what the state serves; ok is false when it records
// none yet, and tickets is how many requests it knows.
func ReadServes(ctx context.Context, st *state.Store) (s Serves, ok bool, tickets int, err error) {
	var f servesFacts
	err = st.View(ctx, func(tx *state.Tx) error {
		var err error
		f, err = readServes(tx, nil)
		return err
	})
	return f.was, f.ok, f.tickets, err
}

// Changed returns the parts of what the state serves (was) that now
// differs in: the API and the helpdesk; the key only on the same API
// (a new API comes with its own key).
func Changed(was, now Serves) Moves {
	m := Moves{API: was.API != now.API, Helpdesk: was.Helpdesk != now.Helpdesk}
	m.Key = !m.API && was.Key != "" && was.Key != now.Key
	return m
}

// CheckServes compares what the state st serves with now, what the
// configuration names, and returns a *[MovedError] for a change that
// allow (TICKETBRIDGE_ALLOW_MOVE) does not allow; nil when st records
// nothing yet or knows no request. A new key on the same API is asked
// for the requests the state knows through api: it is the same
// organisation's once one reads 200, held when all read 404; any other
// answer is returned as the error. It writes nothing: `check` judges with
// it, and the engine before its first cycle (which then records now).
func CheckServes(ctx context.Context, st *state.Store, api API, now Serves, allow Moves) error {
	_, err := judgeServes(ctx, st, api, now, allow)
	return err
}

// judgeServes is CheckServes, returning what it read of the state.
func judgeServes(ctx context.Context, st *state.Store, api API, now Serves, allow Moves) (servesFacts, error) {
	var f servesFacts
	if err := st.View(ctx, func(tx *state.Tx) error {
		var err error
		f, err = readServes(tx, &now)
		return err
	}); err != nil {
		return f, fmt.Errorf("read what the state serves: %w", err)
	}
	if !f.ok || f.tickets == 0 || f.was == now {
		return f, nil
	}
	changed := Changed(f.was, now)
	held := Moves{API: changed.API && !allow.API, Helpdesk: changed.Helpdesk && !allow.Helpdesk}
	read := 0
	if changed.Key && !allow.Key && !held.Any() {
		same, n, err := sameOrganisation(ctx, api, f.probe)
		if err != nil {
			return f, err
		}
		held.Key, read = !same, n
	}
	if held.Any() {
		return f, &MovedError{Was: f.was, Now: now, Moved: held, Read: read, Hotel: st.Hotel()}
	}
	return f, nil
}

// checkServes is [CheckServes] on what the engine was given
// (Deps.Serves), recording it when it passes and differs from what the
// state records. Nothing is written to either side before it returns
// nil.
func (e *Engine) checkServes(ctx context.Context) error {
	if e.serves == nil {
		return nil
	}
	now := *e.serves
	f, err := judgeServes(ctx, e.st, e.api, now, e.cfg.AllowMove)
	if err != nil || (f.ok && f.was == now) || e.st.ReadOnly() {
		return err
	}
	if err := e.st.Update(ctx, func(tx *state.Tx) error { return writeServes(tx, now) }); err != nil {
		return fmt.Errorf("record what the state serves: %w", err)
	}
	switch changed := Changed(f.was, now); {
	case !f.ok || f.tickets == 0:
		e.log.Info("recorded what the state serves", slog.String("api", now.API), slog.String("helpdesk", now.Helpdesk))
	case changed.API || changed.Helpdesk:
		e.log.Warn("the state moved, as TICKETBRIDGE_ALLOW_MOVE allows; remove the variable now that the move is recorded",
			slog.String("from", fmt.Sprintf("API %s, helpdesk %s", f.was.API, f.was.Helpdesk)),
			slog.String("to", fmt.Sprintf("API %s, helpdesk %s", now.API, now.Helpdesk)))
	case changed.Key:
		e.log.Info("the API key changed and reads the requests the state knows: recorded as a key rotation",
			slog.String("was", f.was.Key), slog.String("now", now.Key))
	}
	return nil
}

// sameOrganisation asks api for the requests ids, one after the other,
// with the new key: the first that reads 200 proves it the same
// organisation's. n is how many read 404 (another organisation's, or
// deleted since). Any other answer is returned as the error: the cycle
// fails with it, and the next one asks again.
func sameOrganisation(ctx context.Context, api API, ids []string) (same bool, n int, err error) {
	for _, id := range ids {
		_, err := api.GetTicket(ctx, id)
		switch {
		case err == nil:
			return true, n, nil
		case errors.Is(err, guestapi.ErrNotFound):
			n++
		default:
			return false, n, fmt.Errorf("read request %s with the new API key, to tell whether it is the same organisation's: %w", id, err)
		}
	}
	return n == 0, n, nil
}

// ConfirmMove records in st that it now serves now, for the parts the
// operator named in confirm, each with its new value (Serves.API as
// TICKETBRIDGE_API_URL gives it or as redact.Place prints it, the
// helpdesk's location without the adapter's name, the key's
// fingerprint). Every part that changed but the key must be named, and
// nothing that did not change; a key left unnamed is kept as it was, for
// the daemon to check as a rotation, unless the API is confirmed (a new
// API comes with its own key). It returns the parts it recorded.
func ConfirmMove(ctx context.Context, st *state.Store, now, confirm Serves) (Moves, error) {
	var done Moves
	err := st.Update(ctx, func(tx *state.Tx) error {
		f, err := readServes(tx, nil)
		if err != nil {
			return err
		}
		if !f.ok {
			return errors.New("the state records nothing it serves yet: the daemon records it at its next start, no confirmation needed")
		}
		changed := Changed(f.was, now)
		var problems []string
		check := func(part, flag string, did bool, named, was, want string) {
			switch {
			case did && named == "":
				problems = append(problems, fmt.Sprintf("the %s changed (%s → %s): name it with %s %s", part, was, want, flag, shellQuote(want)))
			case !did && named != "":
				problems = append(problems, fmt.Sprintf("the %s did not change (%s): leave %s out", part, was, flag))
			case did && named != want:
				problems = append(problems, fmt.Sprintf("%s %s is not the %s configured now (%s)", flag, named, part, want))
			}
		}
		hd := confirm.Helpdesk
		if hd == now.Helpdesk { // named with the adapter's name, as status prints it
			hd = location(hd)
		}
		check("helpdesk", "--helpdesk", changed.Helpdesk, hd, location(f.was.Helpdesk), location(now.Helpdesk))
		api := confirm.API
		if api != "" {
			api = cmp.Or(redact.Place(api), api)
		}
		check("API", "--api", changed.API, api, f.was.API, now.API)
		if confirm.Key != "" {
			check("API key", "--key", changed.Key, confirm.Key, f.was.Key, now.Key)
		}
		if len(problems) > 0 {
			return fmt.Errorf("%w: %s", ErrConfirm, strings.Join(problems, "; "))
		}
		done, err = moveServes(tx, f, now, Moves{API: true, Helpdesk: true, Key: confirm.Key != ""})
		return err
	})
	return done, err
}

// RecordMove records in st that it now serves now, for the parts of what
// it serves that parts names (the key with the API, as a new API comes
// with its own key), as a command that moved them itself does (`hotels
// adopt` moves the helpdesk folder). It returns the parts that changed.
// A state that records nothing yet is left so: its next start records.
func RecordMove(ctx context.Context, st *state.Store, now Serves, parts Moves) (Moves, error) {
	var done Moves
	err := st.Update(ctx, func(tx *state.Tx) error {
		f, err := readServes(tx, nil)
		if err != nil || !f.ok {
			return err
		}
		done, err = moveServes(tx, f, now, parts)
		return err
	})
	return done, err
}

// moveServes writes what the state read as f serves, with the parts of
// now that parts names; it returns the parts that changed.
func moveServes(tx *state.Tx, f servesFacts, now Serves, parts Moves) (Moves, error) {
	rec := f.was
	if parts.Helpdesk {
		rec.Helpdesk = now.Helpdesk
	}
	if parts.API {
		rec.API = now.API
	}
	if parts.Key || (parts.API && rec.API != f.was.API) {
		rec.Key = now.Key
	}
	done := Moves{API: rec.API != f.was.API, Helpdesk: rec.Helpdesk != f.was.Helpdesk, Key: rec.Key != f.was.Key}
	if !done.Any() {
		return done, nil
	}
	return done, writeServes(tx, rec)
}

// ErrConfirm is matched by [ConfirmMove]'s error when what the operator
// named is not what changed: nothing was recorded.
var ErrConfirm = errors.New("nothing confirmed")
