package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/ticketbridge/ticketbridge/internal/atomicfile"
	"github.com/ticketbridge/ticketbridge/internal/safefile"
)

// The webhook directory:
//
//	meta.json                 format version and the epoch of the inbound log
//	tickets/<ticket>.json     one record per delivered ticket
//	inbound/<seq>.json        one file per accepted inbound event, seq zero-padded
//
// Every file is written whole to a temporary file, synced, renamed into
// place, and the directory synced: a crash leaves the old or the new
// version, never half of one. Every file is read without following a link
// (see package safefile), and a broken one is reported by its path and the
// place of the fault, never its content.
const (
	metaFile   = "meta.json"
	ticketsDir = "tickets"
	inboundDir = "inbound"
	formatV1   = 1

	// Read limits: far above what the adapter writes (an inbound body is
	// at most 1 MiB), so that only a file that is not the adapter's hits
	// them.
	maxMetaBytes   = 1 << 20
	maxRecordBytes = 64 << 20
	maxEventBytes  = 16 << 20
)

type meta struct {
	Version int    `json:"version"`
	Epoch   string `json:"epoch"` // names this inbound log in cursors; a new directory gets a new one
}

// ticketRecord is what the adapter remembers of one delivered ticket.
type ticketRecord struct {
	UpstreamID string    `json:"upstream_id"`
	Delivery   string    `json:"delivery"`   // the ticket.created delivery id
	Status     string    `json:"status"`     // the receiver's status as far as the bridge knows
	StatusSeq  int       `json:"status_seq"` // status.changed deliveries made so far
	CreatedAt  time.Time `json:"created_at"` // when ticket.created was acknowledged
	// Pending: ticket.created is being delivered and not yet acknowledged.
	// The inbound endpoint accepts events on the ticket already (a receiver
	// may answer the delivery before acknowledging it); every other method
	// treats the ticket as not there.
	Pending bool `json:"pending,omitempty"`
	// Messages maps upstream message ids to the delivery ids of their
	// acknowledged message.added deliveries.
	Messages map[string]string `json:"messages"`
	// Sent is what MarkSent recorded: inbound event id -> upstream message
	// id ("" for a status change).
	Sent map[string]string `json:"sent"`
	// Fields are the field values of the last acknowledged
	// ticket.updated delivery; nil before the first.
	Fields *FieldsInfo `json:"fields,omitempty"`
}

// storedEvent is one accepted inbound event.
type storedEvent struct {
	Seq        uint64       `json:"seq"`
	ReceivedAt time.Time    `json:"received_at"`
	Digest     string       `json:"digest"` // of the event's content, to tell a repeat from a conflicting reuse of its id
	Event      InboundEvent `json:"event"`
}

// store is the webhook directory.
type store struct {
	dir string

	lockMu sync.Mutex
	locks  map[string]*sync.Mutex // per ticket, for read-modify-write of its record

	inMu   sync.Mutex
	epoch  string
	seq    uint64            // last stored inbound sequence number
	byID   map[string]uint64 // inbound event id -> seq
	digest map[string]string // inbound event id -> content digest
}

func openStore(dir string) (*store, error) {
	for _, d := range []string{dir, filepath.Join(dir, ticketsDir), filepath.Join(dir, inboundDir)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("create webhook directory: %w", err)
		}
	}
	s := &store{dir: dir, locks: map[string]*sync.Mutex{}, byID: map[string]uint64{}, digest: map[string]string{}}
	m, err := s.loadMeta()
	if err != nil {
		return nil, err
	}
	s.epoch = m.Epoch
	if err := s.loadInbound(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *store) loadMeta() (meta, error) {
	var m meta
	b, _, err := safefile.ReadFile(filepath.Join(s.dir, metaFile), maxMetaBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		m = meta{Version: formatV1, Epoch: uuid.NewString()}
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return m, fmt.Errorf("encode webhook directory meta: %w", err)
		}
		if err := writeAtomic(s.dir, metaFile, b); err != nil {
			return m, err
		}
		return m, nil
	case err != nil:
		return m, fmt.Errorf("read webhook directory meta: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("read webhook directory meta %s: %w", filepath.Join(s.dir, metaFile), safefile.JSONError(b, err))
	}
	if m.Version != formatV1 || m.Epoch == "" {
		return m, fmt.Errorf("read webhook directory meta %s: format version %d with epoch %q; this build reads version %d", filepath.Join(s.dir, metaFile), m.Version, m.Epoch, formatV1)
	}
	return m, nil
}

// loadInbound reads the ids of every stored inbound event, for
// deduplication, and removes temporary files a crash left behind.
func (s *store) loadInbound() error {
	for _, d := range []string{s.dir, filepath.Join(s.dir, ticketsDir), filepath.Join(s.dir, inboundDir)} {
		removeStaleTemps(d, time.Now().Add(-time.Hour))
	}
	s.inMu.Lock()
	defer s.inMu.Unlock()
	return s.refreshLocked()
}

// removeStaleTemps removes the temporary files in dir older than before:
// left by a crash, not being written by another instance.
func removeStaleTemps(dir string, before time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !atomicfile.IsTemp(e.Name()) {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(before) {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// storedSeqs lists the sequence numbers of the stored inbound events,
// ascending.
func (s *store) storedSeqs() ([]uint64, error) {
	entries, err := os.ReadDir(filepath.Join(s.dir, inboundDir))
	if err != nil {
		return nil, fmt.Errorf("list inbound events: %w", err)
	}
	var out []uint64
	for _, e := range entries { // ReadDir sorts by name, and names sort by number
		if seq, ok := parseSeqName(e.Name()); ok {
			out = append(out, seq)
		}
	}
	return out, nil
}

// refreshLocked takes in the events stored after s.seq, by this instance
// or by another one on the same directory (an old one still shutting down,
// a one-off command). The caller holds inMu.
func (s *store) refreshLocked() error {
	seqs, err := s.storedSeqs()
	if err != nil {
		return err
	}
	for _, seq := range seqs {
		if seq <= s.seq {
			continue
		}
		ev, err := s.readEvent(seq)
		if err != nil {
			return err
		}
		s.byID[ev.Event.ID] = seq
		s.digest[ev.Event.ID] = ev.Digest
		s.seq = seq
	}
	return nil
}

func seqName(seq uint64) string { return fmt.Sprintf("%020d.json", seq) }

func parseSeqName(name string) (uint64, bool) {
	base, ok := strings.CutSuffix(name, ".json")
	if !ok || len(base) != 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(base, 10, 64)
	return n, err == nil
}

func (s *store) readEvent(seq uint64) (storedEvent, error) {
	var ev storedEvent
	path := filepath.Join(s.dir, inboundDir, seqName(seq))
	b, _, err := safefile.ReadFile(path, maxEventBytes)
	if err != nil {
		return ev, fmt.Errorf("read inbound event: %w", err)
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		return ev, fmt.Errorf("read inbound event %s: %w", path, safefile.JSONError(b, err))
	}
	return ev, nil
}

// errConflict: an inbound event id already stored with other content.
var errConflict = errors.New("event id already used for a different event")

// addInbound stores ev durably and returns its sequence number. An event
// whose id is stored already is not stored again: dup is true, and err
// wraps errConflict when the content differs.
func (s *store) addInbound(ev InboundEvent, now time.Time) (seq uint64, dup bool, err error) {
	d := eventDigest(ev)
	s.inMu.Lock()
	defer s.inMu.Unlock()
	for range 100 {
		if err := s.refreshLocked(); err != nil {
			return 0, false, err
		}
		if old, ok := s.byID[ev.ID]; ok {
			if s.digest[ev.ID] != d {
				return old, true, errConflict
			}
			return old, true, nil
		}
		seq = s.seq + 1
		b, err := json.MarshalIndent(storedEvent{Seq: seq, ReceivedAt: now.UTC(), Digest: d, Event: ev}, "", "  ")
		if err != nil {
			return 0, false, fmt.Errorf("encode inbound event: %w", err)
		}
		err = writeNew(filepath.Join(s.dir, inboundDir), seqName(seq), b)
		if errors.Is(err, fs.ErrExist) {
			continue // another instance took this number: read its event and try the next
		}
		if err != nil {
			return 0, false, err
		}
		s.seq = seq
		s.byID[ev.ID] = seq
		s.digest[ev.ID] = d
		return seq, false, nil
	}
	return 0, false, errors.New("store inbound event: no free sequence number after 100 tries")
}

func eventDigest(ev InboundEvent) string {
	h := sha256.New()
	for _, p := range []string{ev.Type, ev.TicketID, ev.Body, ev.AuthorName, ev.Status, ev.CreatedAt} {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// inboundAfter returns up to limit stored events after seq, oldest first.
// It reads the directory, so it sees events any instance stored.
func (s *store) inboundAfter(after uint64, limit int) ([]storedEvent, error) {
	seqs, err := s.storedSeqs()
	if err != nil {
		return nil, err
	}
	var out []storedEvent
	for _, seq := range seqs {
		if seq <= after {
			continue
		}
		if len(out) == limit {
			break
		}
		ev, err := s.readEvent(seq)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// lock serialises read-modify-write of one ticket's record.
func (s *store) lock(ticketID string) func() {
	s.lockMu.Lock()
	m, ok := s.locks[ticketID]
	if !ok {
		m = &sync.Mutex{}
		s.locks[ticketID] = m
	}
	s.lockMu.Unlock()
	m.Lock()
	return m.Unlock
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// recordName is the file name of a ticket's record: the id itself when it
// is a plain name (UUIDs are), else a digest of it.
func recordName(ticketID string) string {
	if plainName.MatchString(ticketID) && !strings.HasSuffix(ticketID, ".") {
		return ticketID + ".json"
	}
	sum := sha256.Sum256([]byte(ticketID))
	return "~" + hex.EncodeToString(sum[:]) + ".json"
}

// ticket reads the record of ticketID; ok is false when there is none.
func (s *store) ticket(ticketID string) (rec ticketRecord, ok bool, err error) {
	path := filepath.Join(s.dir, ticketsDir, recordName(ticketID))
	b, _, err := safefile.ReadFile(path, maxRecordBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, fmt.Errorf("read ticket record: %w", err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, false, fmt.Errorf("read ticket record %s: %w", path, safefile.JSONError(b, err))
	}
	if rec.UpstreamID != ticketID {
		// Two ids with one digest name: not to be expected, never to be merged.
		return rec, false, fmt.Errorf("read ticket record %s: it holds ticket %q, not %q", path, rec.UpstreamID, ticketID)
	}
	if rec.Messages == nil {
		rec.Messages = map[string]string{}
	}
	if rec.Sent == nil {
		rec.Sent = map[string]string{}
	}
	return rec, true, nil
}

func (s *store) putTicket(rec ticketRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("encode ticket record: %w", err)
	}
	return writeAtomic(filepath.Join(s.dir, ticketsDir), recordName(rec.UpstreamID), b)
}

// probe checks that the directory takes a new file.
func (s *store) probe() error {
	if err := writeAtomic(s.dir, ".probe", []byte("ok\n")); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(s.dir, ".probe")); err != nil {
		return fmt.Errorf("remove probe: %w", err)
	}
	return nil
}

// writeAtomic replaces dir/name with data; see package atomicfile.
func writeAtomic(dir, name string, data []byte) error {
	return atomicfile.WriteFile(filepath.Join(dir, name), data, 0o600)
}

// writeNew is writeAtomic for a name that must not exist yet: it fails
// with fs.ErrExist rather than replace a file.
func writeNew(dir, name string, data []byte) error {
	return atomicfile.Create(filepath.Join(dir, name), data, 0o600)
}
