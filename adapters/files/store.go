package files

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/safefile"
	"github.com/ticketbridge/ticketbridge/internal/textdist"
)

// ticketFormat is the version of ticket.json this package writes.
const ticketFormat = 1

// ticketFile is ticket.json: everything the adapter knows of one ticket.
// thread.md is rendered from it.
type ticketFile struct {
	Format          int          `json:"format"`
	Folder          string       `json:"folder"` // the Ref
	UpstreamID      string       `json:"upstream_id"`
	Department      string       `json:"department"`
	Status          string       `json:"status"` // the helpdesk status, as thread.md shows it
	TaskDescription string       `json:"task_description"`
	Origin          string       `json:"origin"`
	Comments        string       `json:"comments,omitempty"`
	GuestRating     *float64     `json:"guest_rating"`
	DueAt           *time.Time   `json:"due_at,omitempty"`   // target_due_at, set by Update
	Priority        string       `json:"priority,omitempty"` // set by Update (adapters.Priority)
	CreatedAt       time.Time    `json:"created_at"`
	UpdatedAt       time.Time    `json:"updated_at"`
	Thread          []entry      `json:"thread"`
	Sent            []sentRecord `json:"sent"`
}

// Entry kinds and sources of ticket.json.
const (
	kindMessage = "message" // an upstream message mirrored by the bridge
	kindReply   = "reply"   // an agent's public reply from the outbox
	kindNote    = "note"    // an agent's internal note from the outbox
	kindStatus  = "status"  // a status change

	sourceUpstream = "upstream" // mirrored from the guest request
	sourceOutbox   = "outbox"   // dropped into the outbox by a person or script
	sourceBridge   = "bridge"   // set by the bridge: a status, or a note of a field (Update)
)

// entry is one item of a ticket's thread: a message, a reply, a note or a
// status change.
type entry struct {
	ID         string `json:"id"` // the helpdesk id: 1, 2, ... within the ticket
	Kind       string `json:"kind"`
	Source     string `json:"source"`
	UpstreamID string `json:"upstream_id,omitempty"` // kind message
	EventID    string `json:"event_id,omitempty"`    // source outbox: the processed file's name
	AuthorType string `json:"author_type,omitempty"` // kind message
	AuthorName string `json:"author_name,omitempty"`
	Public     bool   `json:"public"`
	Status     string `json:"status,omitempty"` // kind status: the helpdesk status
	Body       string `json:"body,omitempty"`
	// Marker is the marker of a note the bridge wrote for a field (the
	// rating, the console comment: adapters.Marker.Line), by which Update
	// finds it again.
	Marker string    `json:"marker,omitempty"`
	At     time.Time `json:"at"`
}

// sentRecord is what MarkSent recorded.
type sentRecord struct {
	EventID           string    `json:"event_id"`
	UpstreamMessageID string    `json:"upstream_message_id"` // "" for a status change
	At                time.Time `json:"at"`
}

func (t *ticketFile) nextID() string {
	n := 0
	for _, e := range t.Thread {
		if v, err := strconv.Atoi(e.ID); err == nil && v > n {
			n = v
		}
	}
	return strconv.Itoa(n + 1)
}

func (t *ticketFile) byUpstream(id string) *entry {
	for i := range t.Thread {
		if t.Thread[i].UpstreamID == id && t.Thread[i].Kind == kindMessage {
			return &t.Thread[i]
		}
	}
	return nil
}

func (t *ticketFile) byEvent(id string) *entry {
	for i := range t.Thread {
		if t.Thread[i].EventID == id {
			return &t.Thread[i]
		}
	}
	return nil
}

func (t *ticketFile) sentFor(eventID string) (sentRecord, bool) {
	for _, s := range t.Sent {
		if s.EventID == eventID {
			return s, true
		}
	}
	return sentRecord{}, false
}

func (t *ticketFile) found(m adapters.StatusMap) adapters.Found {
	at := t.CreatedAt // the status it was made with, until a change says otherwise
	for _, e := range t.Thread {
		if e.Kind == kindStatus && e.At.After(at) {
			at = e.At
		}
	}
	f := adapters.Found{Ref: adapters.Ref(t.Folder), Messages: map[string]string{}, Sent: map[string]string{},
		Status: m.Current(t.Status, at)}
	for _, e := range t.Thread {
		if e.Kind == kindMessage && e.UpstreamID != "" {
			f.Messages[e.UpstreamID] = e.ID
		}
	}
	for _, s := range t.Sent {
		f.Sent[s.EventID] = s.UpstreamMessageID
	}
	return f
}

// events returns the replies and notes of the outbox that Changes applied
// to t, as it reported them (a.event builds both), oldest first.
func (a *Adapter) events(t *ticketFile) []adapters.Event {
	evs := []adapters.Event{}
	for _, e := range t.Thread {
		if e.Source != sourceOutbox || (e.Kind != kindReply && e.Kind != kindNote) {
			continue
		}
		kind := adapters.EventReply
		if e.Kind == kindNote {
			kind = adapters.EventNote
		}
		evs = append(evs, a.event(e.EventID, t, OutboxItem{Kind: kind, Author: e.AuthorName, Body: e.Body}, "", e.At))
	}
	slices.SortStableFunc(evs, func(x, y adapters.Event) int { return x.At.Compare(y.At) })
	return evs
}

// validFolder reports whether name can be a ticket folder's name: one
// plain path element that the adapter would not skip.
func validFolder(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.HasPrefix(name, ".") &&
		!strings.ContainsAny(name, `/\`+"\x00") && filepath.Base(name) == name
}

// ticketDir returns the folder of ref, or ErrNotFound when ref cannot be
// one.
func (a *Adapter) ticketDir(ref adapters.Ref) (string, error) {
	if !validFolder(string(ref)) {
		return "", fmt.Errorf("ticket %q: %w", ref, adapters.ErrNotFound)
	}
	return filepath.Join(a.dir, ticketsDir, string(ref)), nil
}

// load reads ticket.json of ref; ErrNotFound when the folder or the file is
// missing.
func (a *Adapter) load(ref adapters.Ref) (*ticketFile, error) {
	dir, err := a.ticketDir(ref)
	if err != nil {
		return nil, err
	}
	t, err := readTicket(filepath.Join(dir, ticketJSON))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("ticket %q: %w", ref, adapters.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if t.Folder != string(ref) {
		// The folder was renamed by hand: the name is the truth.
		t.Folder = string(ref)
	}
	return t, nil
}

// maxTicketBytes caps ticket.json: far above any real thread.
const maxTicketBytes = 64 << 20

// readTicket reads a ticket.json. Ticket folders are the group's to
// rename and read, so the file is opened without following a link, must be
// a regular file, and its errors say where it is broken, never what it
// holds.
func readTicket(path string) (*ticketFile, error) {
	b, _, err := safefile.ReadFile(path, maxTicketBytes)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var t ticketFile
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, safefile.JSONError(b, err))
	}
	if t.Format > ticketFormat {
		return nil, fmt.Errorf("read %s: format %d is newer than this version understands (%d)", path, t.Format, ticketFormat)
	}
	return &t, nil
}

// save writes ticket.json, then thread.md, each atomically, and syncs the
// ticket's folder once for both. ticket.json is the truth; a thread.md left
// stale by a crash between the two is rewritten by the next save or by
// [Adapter.render].
func (a *Adapter) save(t *ticketFile) error {
	dir, err := a.ticketFolder(t)
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := a.write(dir, t); err != nil {
		return err
	}
	return dir.Sync()
}

// saveGrouped is save for the writes whose folder's sync waits for the
// next [Adapter.Flush]: those of EnsureTicket, Append and SetStatus.
func (a *Adapter) saveGrouped(t *ticketFile) error {
	dir, err := a.ticketFolder(t)
	if err != nil {
		return err
	}
	defer dir.Close()
	a.pending[dir.Path()] = true
	return a.write(dir, t)
}

// ticketFolder opens t's folder for a write, following no link (see sub).
func (a *Adapter) ticketFolder(t *ticketFile) (*safefile.Dir, error) {
	if _, err := a.ticketDir(adapters.Ref(t.Folder)); err != nil {
		return nil, err
	}
	return a.sub(filepath.Join(ticketsDir, t.Folder))
}

// write writes ticket.json, then thread.md, each whole, into t's folder
// dir, whose sync makes both durable.
func (a *Adapter) write(dir *safefile.Dir, t *ticketFile) error {
	b, err := encodeTicket(t)
	if err != nil {
		return err
	}
	if err := dir.Replace(ticketJSON, b, fileMode); err != nil {
		return err
	}
	return a.render(dir, t)
}

func encodeTicket(t *ticketFile) ([]byte, error) {
	t.Format = ticketFormat
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode ticket %s: %w", t.Folder, err)
	}
	return append(b, '\n'), nil
}

// render writes thread.md when its content differs from t's rendering,
// leaving the folder's sync to its caller.
func (a *Adapter) render(dir *safefile.Dir, t *ticketFile) error {
	want := renderThread(t, a.status.FromHelpdesk)
	// Not through a link, not from a pipe: what is there is replaced.
	if old, _, err := dir.ReadFile(threadMD, int64(len(want))); err == nil && bytes.Equal(old, want) {
		return nil
	}
	return dir.Replace(threadMD, want, fileMode)
}

// slug turns s into a lower-case file-name fragment of letters, digits and
// single dashes, at most max runes long.
func slug(s string, max int) string {
	var b strings.Builder
	dash := false
	n := 0
	for _, r := range strings.ToLower(s) {
		if n >= max {
			break
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
				n++
			}
			b.WriteRune(r)
			n++
			dash = false
			continue
		}
		dash = true
	}
	return strings.Trim(b.String(), "-")
}

// folderNames returns the names to try, in order, for a new ticket's
// folder: <created date>-<department>-<first 8 of the id>, then with the
// whole id.
func folderNames(t adapters.Ticket) []string {
	date := "undated"
	if !t.CreatedAt.IsZero() {
		date = t.CreatedAt.UTC().Format("2006-01-02")
	}
	dept := slug(t.Department, 32)
	if dept == "" {
		dept = "general"
	}
	id := slug(t.UpstreamID, 80)
	if id == "" {
		id = "ticket"
	}
	short := id
	if utf8.RuneCountInString(short) > 8 {
		short = string([]rune(short)[:8])
		short = strings.TrimRight(short, "-")
	}
	names := []string{date + "-" + dept + "-" + short}
	if long := date + "-" + dept + "-" + id; long != names[0] {
		names = append(names, long)
	}
	return names
}

// scan reads every ticket folder not yet in the index into it.
func (a *Adapter) scan() error {
	root := filepath.Join(a.dir, ticketsDir)
	if a.scanFresh(root) {
		return nil
	}
	fi, statErr := os.Stat(root) // before reading: a change while reading shows next time
	a.scans++
	des, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, fs.ErrNotExist) { // missing: read-only, nothing yet
		return fmt.Errorf("scan tickets: %w", err)
	}
	// The stamp is trusted only when the scan saw every folder whole (a
	// folder still being copied in does not move the tickets folder's time
	// when its ticket.json arrives) and the time is not so recent that a
	// coarse clock could give a later change the same one, unless the time
	// is the one the adapter's own last creation left: then a change the
	// stamp hides came in the same tick as that creation, as after a
	// restamp. Without that, an import into a young folder (each creation
	// moves its time) read the whole folder at every lookup.
	whole := statErr == nil && (time.Since(fi.ModTime()) > stampSettle ||
		(!a.ownStamp.IsZero() && fi.ModTime().Equal(a.ownStamp)))
	a.scanStamp = time.Time{}
	defer func() {
		if whole {
			a.scanStamp = fi.ModTime()
		}
	}()
	for _, de := range des {
		name := de.Name()
		if !de.IsDir() || !validFolder(name) || a.scanned[name] {
			continue
		}
		t, err := readTicket(filepath.Join(root, name, ticketJSON))
		if errors.Is(err, fs.ErrNotExist) {
			whole = false
			continue // not a ticket folder (yet)
		}
		if err != nil {
			whole = false
			a.log.Warn("skipping unreadable ticket folder", slog.String("op", "scan"), slog.String("folder", name), slog.Any("error", err))
			continue
		}
		a.scanned[name] = true
		if t.UpstreamID != "" {
			if _, dup := a.index[t.UpstreamID]; !dup {
				a.index[t.UpstreamID] = adapters.Ref(name)
			}
		}
	}
	return nil
}

// scanFresh reports whether the tickets folder root is as the last whole
// scan saw it: its modification time did not move.
func (a *Adapter) scanFresh(root string) bool {
	if a.scanStamp.IsZero() {
		return false
	}
	fi, err := os.Stat(root)
	return err == nil && fi.ModTime().Equal(a.scanStamp)
}

// restamp records root's modification time after the adapter's own
// change, as the last whole scan's when fresh says that scan still held
// before the change.
func (a *Adapter) restamp(root string, fresh bool) {
	fi, err := os.Stat(root)
	if err != nil {
		a.ownStamp, a.scanStamp = time.Time{}, time.Time{}
		return
	}
	a.ownStamp = fi.ModTime()
	if fresh {
		a.scanStamp = fi.ModTime()
	}
}

// find returns the ticket mirroring upstreamID, nil when there is none.
func (a *Adapter) find(upstreamID string) (*ticketFile, error) {
	for attempt := 0; attempt < 2; attempt++ {
		if ref, ok := a.index[upstreamID]; ok {
			t, err := a.load(ref)
			if err == nil && t.UpstreamID == upstreamID {
				return t, nil
			}
			if err != nil && !errors.Is(err, adapters.ErrNotFound) {
				return nil, err
			}
			// Moved or removed by hand: forget it and look again.
			delete(a.index, upstreamID)
			delete(a.scanned, string(ref))
		}
		if err := a.scan(); err != nil {
			return nil, err
		}
		if _, ok := a.index[upstreamID]; !ok {
			return nil, nil
		}
	}
	return nil, nil
}

// minPrefix is the shortest start of an upstream id or a folder name that
// names a ticket: the short id `ticketbridge status` and the status page
// show, and the folder names end in, has 8 characters.
const minPrefix = 8

// maxSuggestions bounds the folders an explanation names.
const maxSuggestions = 3

// resolve finds the ticket an outbox file names: a folder name, an
// upstream id (compared without regard to case), or the start of one of
// them, 8 characters at least, that no other ticket's shares. When it
// finds none it says why, for the file's explanation, naming the folders
// that come closest; the explanation never repeats what the file wrote.
// event, when not "", is the processed file's name: a start that more
// than one ticket shares names the one that already holds that event (a
// ticket made after the file was accepted does not take it over).
func (a *Adapter) resolve(name, event string) (t *ticketFile, why string, err error) {
	name = strings.TrimSpace(name)
	name = strings.TrimSuffix(strings.TrimPrefix(strings.ReplaceAll(name, `\`, "/"), ticketsDir+"/"), "/")
	if validFolder(name) {
		t, err := a.load(adapters.Ref(name))
		if err == nil {
			return t, "", nil
		}
		if !errors.Is(err, adapters.ErrNotFound) {
			return nil, "", err
		}
	}
	t, err = a.find(name)
	if err != nil || t != nil {
		return t, "", err
	}
	if err := a.scan(); err != nil {
		return nil, "", err
	}
	ids := make([]string, 0, len(a.index))
	for id := range a.index {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	want := strings.ToLower(name)
	var starts []string // the ids of the tickets whose id or folder starts with name
	for _, id := range ids {
		lid, folder := strings.ToLower(id), strings.ToLower(string(a.index[id]))
		if lid == want {
			t, err := a.find(id)
			return t, "", err
		}
		if len(want) >= minPrefix && (strings.HasPrefix(lid, want) || strings.HasPrefix(folder, want)) {
			starts = append(starts, id)
		}
	}
	switch {
	case len(starts) == 1:
		t, err := a.find(starts[0])
		if t == nil && err == nil {
			return nil, "ticket: the ticket whose id or folder starts so is gone", nil
		}
		return t, "", err
	case len(starts) > 1:
		if event != "" {
			for _, id := range starts {
				if t, err := a.find(id); err == nil && t != nil && t.byEvent(event) != nil {
					return t, "", nil
				}
			}
		}
		folders := make([]string, 0, len(starts))
		for _, id := range starts {
			folders = append(folders, string(a.index[id]))
		}
		slices.Sort(folders)
		return nil, "ticket: more than one ticket's id or folder starts so (" + listFolders(folders) + "); write more of the id, or the folder's whole name", nil
	}
	why = "ticket: no ticket folder has that name or upstream id"
	if len(want) < minPrefix {
		why += fmt.Sprintf(" (the start of one needs %d characters at least)", minPrefix)
	}
	if near := a.closest(want, ids); len(near) > 0 {
		why += "; the closest: " + strings.Join(near, ", ")
	}
	return nil, why, nil
}

// listFolders joins folder names for an explanation, naming at most
// maxSuggestions of them.
func listFolders(folders []string) string {
	if len(folders) <= maxSuggestions {
		return strings.Join(folders, ", ")
	}
	return strings.Join(folders[:maxSuggestions], ", ") + fmt.Sprintf(" and %d more", len(folders)-maxSuggestions)
}

// closest returns the names of the folders (at most maxSuggestions) whose
// name or upstream id comes closest to want (lower case): the longest
// shared start first, then the fewest edits, counting against an id or a
// name only as much of it as want is long (a short id is not far from the
// whole id it starts). Folders neither close by start nor by edits are
// left out.
func (a *Adapter) closest(want string, ids []string) []string {
	if want == "" {
		return nil
	}
	type near struct {
		folder       string
		shared, dist int
	}
	var ns []near
	for _, id := range ids {
		folder := string(a.index[id])
		n := near{folder: folder, dist: -1}
		for _, c := range []string{strings.ToLower(id), strings.ToLower(folder)} {
			n.shared = max(n.shared, textdist.CommonPrefix(want, c))
			d := textdist.Levenshtein(want, c[:min(len(c), len(want))])
			if n.dist < 0 || d < n.dist {
				n.dist = d
			}
		}
		if n.shared >= 4 || n.dist <= max(2, len(want)/4) {
			ns = append(ns, n)
		}
	}
	slices.SortFunc(ns, func(x, y near) int {
		return cmp.Or(cmp.Compare(y.shared, x.shared), cmp.Compare(x.dist, y.dist), strings.Compare(x.folder, y.folder))
	})
	out := make([]string, 0, maxSuggestions)
	for _, n := range ns[:min(len(ns), maxSuggestions)] {
		out = append(out, n.folder)
	}
	return out
}
