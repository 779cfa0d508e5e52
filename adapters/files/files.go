// Package files is the adapter "files": a helpdesk made of plain folders,
// the bridge's embedded default. Each guest request becomes a folder a
// person can open; replies, internal notes and status changes come back
// from files a person or a script drops into an outbox folder.
//
// Layout under the directory (TICKETBRIDGE_FILES_DIR):
//
//	tickets/<created date>-<department>-<short id>/
//	    thread.md     for people: the request, its facts, every message
//	                  with author, type, time and public/internal, every
//	                  status change; rewritten on each change
//	    ticket.json   for programs: the ticket's fields, the thread with
//	                  upstream and helpdesk ids, what MarkSent recorded
//	outbox/           drop replies, notes and status changes here
//	    README.txt    the format, for whoever opens the folder
//	    processed/    picked-up files, renamed <sequence>-<name>
//	    failed/       files that could not be used, each next to
//	                  <name>.error.txt saying what is wrong
//
// A folder is found again after the bridge's state is lost by scanning the
// ticket.json files for the upstream id, so its name may be changed by
// hand. Every write is atomic (temporary file, fsync, rename, fsync of the
// directory), and one adapter at a time works on a directory (an advisory
// lock on <dir>/.lock). The writes the engine makes in a batch
// (EnsureTicket, Append, SetStatus) leave the fsync of their folders to
// [Adapter.Flush], which syncs each folder once and which the engine calls
// before it stores what they did; a new folder is synced before its rename,
// so that it never appears without its ticket.json.
//
// # Outbox files
//
// A text file: header lines, a blank line, the text.
//
//	ticket: 2026-03-14-housekeeping-3f2a9c1b   (the folder name or the upstream id,
//	                                           or a start of 8 characters or more of
//	                                           either that names one ticket: 3f2a9c1b)
//	kind: reply                                (reply, note or status)
//	author: Anna (front desk)                  (optional)
//	status: done                               (kind status only)
//
//	Your towels are on their way.
//
// Or a file whose name ends in .json holding one object with the fields
// "ticket", "kind", "author", "body" and "status". A reply is public (the
// guest sees it), a note is internal; a status is one of the helpdesk
// statuses the bridge maps upstream (by default new, assigned, in_progress,
// done, completed, cancelled; case, spaces and dashes do not matter).
//
// Only complete files are picked up: write name.tmp, then rename it.
// Hidden files, names ending in .tmp, .part, .swp or ~, README files and
// files changed less than TICKETBRIDGE_FILES_SETTLE ago are left alone.
// Files are taken oldest first (by modification time, then name).
//
// Crash safety: Changes moves a picked-up file into processed/ under the
// next sequence number (the event's id, stable for good) and only then
// records it in the ticket; it reports every processed file after the
// cursor, and the cursor is the last sequence number reported. Nothing is
// deleted, so an event survives until the engine has stored a cursor past
// it and beyond. The cursor cannot skip a change: sequence numbers are
// taken in the order files are moved, by the one process that holds the
// folder's lock, so a number never appears behind one already reported
// (TestCrashBetweenMoveAndApply, TestSequenceSurvivesPruning). A file that
// cannot be used (unknown ticket, kind or status, no text, not UTF-8, too
// large) goes to failed/ with its explanation written first: never lost,
// never half applied. The outbox and the ticket folders are the group's to
// write, so the adapter reads none of their files through a link (a link, a
// pipe or a device is set aside unread; see package safefile) and its
// explanations name the line or field at fault, never the file's content.
// An unknown ticket's explanation names the folders that come closest.
// The files set aside are counted as it happens ([Adapter.SetAside]) and
// listed, with the first line of their explanation, until the team takes
// them away ([Adapter.Held]): status, check, the status page and the
// metrics show them.
//
// This package is not a mail or chat gateway and does not watch the
// folder: it looks when the engine asks for changes.
package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/envvar"
	"github.com/ticketbridge/ticketbridge/internal/safefile"
)

// Name is the adapter's registry name.
const Name = "files"

// Names inside the directory.
const (
	ticketsDir   = "tickets"
	outboxDir    = "outbox"
	processedDir = "processed"
	failedDir    = "failed"
	ticketJSON   = "ticket.json"
	threadMD     = "thread.md"
	lockFile     = ".lock"
	lastSeqFile  = ".last-sequence"
	errorSuffix  = ".error.txt"
	newPrefix    = ".new-"
)

// Defaults of [Config] and [Options].
const (
	DefaultDir            = "helpdesk"
	DefaultMaxOutboxBytes = 256 << 10
	DefaultSettle         = 2 * time.Second
	DefaultPageSize       = 100
	maxMaxOutboxBytes     = 16 << 20
)

// Config is the adapter's environment.
type Config struct {
	// Dir is the helpdesk directory. Empty means $STATE_DIRECTORY/helpdesk
	// under systemd, else ./helpdesk.
	Dir string `env:"TICKETBRIDGE_FILES_DIR"`
	// MaxOutboxBytes is the largest outbox file picked up; larger ones go
	// to failed/.
	MaxOutboxBytes int64 `env:"TICKETBRIDGE_FILES_MAX_OUTBOX_BYTES, default=262144"`
	// Settle is how long an outbox file must be unchanged before it is
	// picked up, for editors that save in place.
	Settle time.Duration `env:"TICKETBRIDGE_FILES_SETTLE, default=2s"`
}

// LoadConfig reads the adapter's variables from env and checks them.
func LoadConfig(ctx context.Context, env envconfig.Lookuper) (Config, error) {
	var c Config
	if env == nil {
		env = envconfig.MapLookuper(nil)
	}
	if err := envvar.Load(ctx, env, "", "files adapter configuration", &c); err != nil {
		return c, err
	}
	if c.Dir == "" {
		c.Dir = DefaultDir
		if dir, ok := env.Lookup("STATE_DIRECTORY"); ok && dir != "" {
			c.Dir = filepath.Join(strings.Split(dir, ":")[0], DefaultDir)
		}
	}
	if c.MaxOutboxBytes <= 0 || c.MaxOutboxBytes > maxMaxOutboxBytes {
		return c, fmt.Errorf("read files adapter configuration: TICKETBRIDGE_FILES_MAX_OUTBOX_BYTES=%d: want 1 to %d", c.MaxOutboxBytes, maxMaxOutboxBytes)
	}
	if c.Settle < 0 {
		return c, fmt.Errorf("read files adapter configuration: TICKETBRIDGE_FILES_SETTLE=%s: must not be negative", c.Settle)
	}
	return c, nil
}

// Options configure an [Adapter].
type Options struct {
	Dir            string             // required
	Status         adapters.StatusMap // zero: adapters.APIStatusMap
	MaxOutboxBytes int64              // 0: DefaultMaxOutboxBytes
	Settle         time.Duration      // 0: picked up at once
	PageSize       int                // 0: DefaultPageSize
	Logger         *slog.Logger       // nil: discard
	// ReadOnly opens the folder for a dry run: New creates nothing (a
	// missing folder reads as empty), only Lookup, PeekChanges and Close
	// may be called, and the others fail with ErrReadOnly.
	ReadOnly bool
	// Guard, when set, is asked before each operation on the folder once
	// its lock is held (see adapters.Deps.Guard): while it refuses,
	// nothing is read or written and its error is returned.
	Guard func() error
}

// ErrReadOnly is returned by the writes of an adapter opened with
// Options.ReadOnly.
var ErrReadOnly = errors.New("files helpdesk opened read-only (dry run)")

// Adapter is the files helpdesk. It is safe for concurrent use; its
// operations take turns.
type Adapter struct {
	dir       string
	status    adapters.StatusMap
	maxOutbox int64
	settle    time.Duration
	page      int
	log       *slog.Logger
	readOnly  bool
	guard     func() error // nil: none
	// beforeOpen, when set (by a test), is called with the path of an
	// outbox or processed file just before it is opened.
	beforeOpen func(path string)

	// setAside counts the outbox files moved to failed/ (see
	// [Adapter.SetAside]).
	setAside atomic.Uint64
	// heldMu guards heldCache: what Held read of each explanation in
	// failed/, by its name, so that it reads again only what changed.
	heldMu    sync.Mutex
	heldCache map[string]heldFile
	// failedEmpty is failed/ when Held last found it empty (heldMu).
	failedEmpty emptyStamp

	// flushMu makes Flush calls take turns, so that none returns while
	// another still syncs what it took.
	flushMu sync.Mutex

	mu   sync.Mutex
	lock *os.File // nil when read-only and the folder has no lock file yet
	// root is the helpdesk folder, open: every write below it goes
	// through it, following no link (see sub). nil when read-only.
	root *safefile.Dir
	// pending holds the folders that EnsureTicket, Append and SetStatus
	// changed since the last Flush, to sync (see Flush).
	pending map[string]bool
	// reserved holds the names of the folders being built (see ensure).
	reserved map[string]bool
	closed   bool
	index    map[string]adapters.Ref // upstream id -> folder
	scanned  map[string]bool         // folders read into index
	// scanStamp is the tickets folder's modification time when it was last
	// scanned whole: while it stays, no folder was added, removed or
	// renamed, so a lookup that misses needs no scan.
	scanStamp time.Time
	// processedStamp is processed/'s modification time when a report last
	// listed it and found no event after processedLast, its highest
	// sequence number (see reportedAll); zero when unknown.
	processedStamp time.Time
	processedLast  int64
	// outboxEmpty is the outbox when ingest last found it empty.
	outboxEmpty emptyStamp
	// ownStamp is the tickets folder's modification time right after the
	// adapter's own last creation in it: a scan that finds it so saw every
	// change made before, however recent (see scan).
	ownStamp time.Time
	// scans counts the reads of the tickets folder (tests).
	scans int
}

var (
	_ adapters.Helpdesk = (*Adapter)(nil)
	_ adapters.Checker  = (*Adapter)(nil)
	_ adapters.Flusher  = (*Adapter)(nil)
)

// Factory is the registry's factory: it reads [Config] from deps.Env.
func Factory(ctx context.Context, deps adapters.Deps) (adapters.Helpdesk, error) {
	c, err := LoadConfig(ctx, deps.Env)
	if err != nil {
		return nil, err
	}
	return New(ctx, Options{
		Dir:            c.Dir,
		Status:         adapters.APIStatusMap().Override(deps),
		MaxOutboxBytes: c.MaxOutboxBytes,
		Settle:         c.Settle,
		Logger:         deps.Logger,
		ReadOnly:       deps.ReadOnly,
		Guard:          deps.Guard,
	})
}

// New opens the helpdesk directory opts.Dir, creating it and its folders
// when missing (unless opts.ReadOnly).
func New(ctx context.Context, opts Options) (*Adapter, error) {
	if strings.TrimSpace(opts.Dir) == "" {
		return nil, fmt.Errorf("open files helpdesk: no directory (TICKETBRIDGE_FILES_DIR)")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("open files helpdesk %s: %w", opts.Dir, err)
	}
	a := &Adapter{
		dir: dir, status: opts.Status, maxOutbox: opts.MaxOutboxBytes, settle: opts.Settle,
		page: opts.PageSize, log: opts.Logger, readOnly: opts.ReadOnly, guard: opts.Guard,
		index: map[string]adapters.Ref{}, scanned: map[string]bool{},
		pending: map[string]bool{}, reserved: map[string]bool{},
	}
	if len(a.status.ToHelpdesk) == 0 {
		a.status = adapters.APIStatusMap()
	}
	if a.maxOutbox <= 0 {
		a.maxOutbox = DefaultMaxOutboxBytes
	}
	if a.page <= 0 {
		a.page = DefaultPageSize
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.readOnly {
		// flock works on a descriptor opened for reading: a running
		// daemon's writes are still waited for.
		a.lock, err = os.OpenFile(filepath.Join(a.dir, lockFile), os.O_RDONLY|safefile.Flags, 0)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("open files helpdesk: %w", err)
		}
		return a, nil
	}
	// The folder itself is made by path (mkdir makes a folder or finds
	// one, never follows a link at the element it makes), then opened
	// (see sub); what lies below it is made and opened through it.
	if err := os.MkdirAll(a.dir, dirMode); err != nil {
		return nil, fmt.Errorf("open files helpdesk: create %s: %w", a.dir, err)
	}
	if a.root, err = safefile.OpenDir(a.dir); err != nil {
		return nil, fmt.Errorf("open files helpdesk: %w", err)
	}
	for _, rel := range []string{ticketsDir, outboxDir, filepath.Join(outboxDir, processedDir), filepath.Join(outboxDir, failedDir)} {
		if err := a.mkdir(rel); err != nil {
			a.root.Close()
			return nil, fmt.Errorf("open files helpdesk: create %w", err)
		}
	}
	// The folder is the group's too: a link in place of the lock file is
	// refused rather than followed (and maybe created) elsewhere.
	a.lock, err = a.root.OpenFile(lockFile, os.O_RDWR|os.O_CREATE|safefile.Flags, fileMode)
	if err != nil {
		a.root.Close()
		return nil, fmt.Errorf("open files helpdesk: %w", err)
	}
	if info, err := a.lock.Stat(); err != nil || !info.Mode().IsRegular() {
		a.lock.Close()
		a.root.Close()
		return nil, fmt.Errorf("open files helpdesk: %s: %w", filepath.Join(a.dir, lockFile), safefile.ErrNotRegular)
	}
	err = a.do(ctx, func() error {
		a.cleanStale()
		outbox, err := a.sub(outboxDir)
		if err != nil {
			return err
		}
		defer outbox.Close()
		if there, err := outbox.Exists("README.txt"); err != nil || there {
			return err
		}
		return outbox.WriteFile("README.txt", []byte(outboxReadme(a.statusWords())), fileMode)
	})
	if err != nil {
		a.lock.Close()
		a.root.Close()
		return nil, fmt.Errorf("open files helpdesk: %w", err)
	}
	return a, nil
}

// mkdir makes the folder rel below the helpdesk folder when it is missing,
// its parent reached as sub reaches it.
func (a *Adapter) mkdir(rel string) error {
	parent, name := filepath.Split(rel)
	dir := a.root
	if parent != "" {
		var err error
		if dir, err = a.sub(filepath.Clean(parent)); err != nil {
			return err
		}
		defer dir.Close()
	}
	if err := dir.Mkdir(name, dirMode); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// sub opens the folder rel below the helpdesk folder for a write. The
// folders below it are the staff's group's to rename (2770, no sticky
// bit): a link in place of one of them, to /etc/profile.d say, is refused
// rather than written through, since a command run by root would write
// where the link points.
func (a *Adapter) sub(rel string) (*safefile.Dir, error) {
	if a.root == nil {
		return nil, fmt.Errorf("%s: %w", rel, ErrReadOnly)
	}
	return a.root.Sub(rel)
}

func (a *Adapter) outboxDir() string    { return filepath.Join(a.dir, outboxDir) }
func (a *Adapter) processedDir() string { return filepath.Join(a.dir, outboxDir, processedDir) }
func (a *Adapter) failedDir() string    { return filepath.Join(a.dir, outboxDir, failedDir) }

// Dir returns the helpdesk directory, absolute.
func (a *Adapter) Dir() string { return a.dir }

// cleanStale removes ticket folders a crash left half made (they were
// never renamed into place, so nothing refers to them).
func (a *Adapter) cleanStale() {
	tickets, err := a.sub(ticketsDir)
	if err != nil {
		return
	}
	defer tickets.Close()
	des, err := tickets.ReadDir()
	if err != nil {
		return
	}
	for _, de := range des {
		if !strings.HasPrefix(de.Name(), newPrefix) {
			continue
		}
		if info, err := de.Info(); err == nil && time.Since(info.ModTime()) > time.Hour {
			_ = tickets.RemoveAll(de.Name())
		}
	}
}

// lockPatience is how long do waits for the folder's lock before it says
// so in the log: another process's writes hold it for milliseconds.
const lockPatience = 10 * time.Second

// do runs f holding the adapter's mutex and the directory's lock, unless
// the adapter's guard refuses (see [Options.Guard]) once the lock is held.
func (a *Adapter) do(ctx context.Context, f func() error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errors.New("files helpdesk closed")
	}
	var waiting time.Time
	for said := false; a.lock != nil; {
		ok, err := tryLock(a.lock)
		if err != nil {
			return fmt.Errorf("lock %s: %w", filepath.Join(a.dir, lockFile), err)
		}
		if ok {
			break
		}
		switch {
		case waiting.IsZero():
			waiting = time.Now()
		case !said && time.Since(waiting) > lockPatience:
			// A process that holds the folder and does not run (stopped,
			// or hung) keeps the hotel waiting here: the log says where.
			a.log.Warn("waiting for the helpdesk folder: another process holds its lock",
				slog.String("lock", filepath.Join(a.dir, lockFile)), slog.Duration("waited", time.Since(waiting).Round(time.Second)))
			said = true
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("lock %s: another process holds it: %w", filepath.Join(a.dir, lockFile), ctx.Err())
		case <-t.C:
		}
	}
	defer func() {
		if a.lock == nil {
			return
		}
		if err := unlock(a.lock); err != nil {
			a.log.Error("unlock helpdesk directory", slog.Any("error", err))
		}
	}()
	if err := ctx.Err(); err != nil {
		return err
	}
	if a.guard != nil {
		if err := a.guard(); err != nil {
			return err
		}
	}
	return f()
}

// Name returns "files".
func (a *Adapter) Name() string { return Name }

// Location returns the helpdesk folder, absolute (see adapters.Locator).
func (a *Adapter) Location() string {
	if abs, err := filepath.Abs(a.dir); err == nil {
		return abs
	}
	return filepath.Clean(a.dir)
}

// Status returns the adapter's status mapping.
func (a *Adapter) Status() adapters.StatusMap { return a.status }

// Close flushes (see [Adapter.Flush]) and releases the directory's lock
// file.
func (a *Adapter) Close() error {
	ferr := a.Flush(context.Background())
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return ferr
	}
	a.closed = true
	if a.root != nil {
		a.root.Close()
	}
	if a.lock == nil {
		return ferr
	}
	return errors.Join(ferr, a.lock.Close())
}

// writable refuses a write of an adapter opened read-only.
func (a *Adapter) writable(op string) error {
	if a.readOnly {
		return fmt.Errorf("%s: %w", op, ErrReadOnly)
	}
	return nil
}

// Check makes sure every folder exists and is writable. Opened read-only
// (as `ticketbridge check` opens it), it creates and writes nothing: a
// folder that exists must be a folder this process may write, and one
// that does not must be one the adapter can make at its first start (its
// nearest existing parent a folder this process may write).
func (a *Adapter) Check(ctx context.Context) error {
	if a.readOnly {
		return a.checkReadOnly()
	}
	return a.do(ctx, func() error {
		for _, rel := range []string{".", ticketsDir, outboxDir, filepath.Join(outboxDir, processedDir), filepath.Join(outboxDir, failedDir)} {
			if err := a.probe(rel); err != nil {
				return fmt.Errorf("check files helpdesk: %w", err)
			}
		}
		return nil
	})
}

// probe writes and removes a file in the folder rel, reached as every
// write is (see sub).
func (a *Adapter) probe(rel string) error {
	d := a.root
	if rel != "." {
		var err error
		if d, err = a.sub(rel); err != nil {
			return err
		}
		defer d.Close()
	}
	probe := ".check-" + randomSuffix()
	if err := d.WriteFile(probe, []byte("ticketbridge check\n"), fileMode); err != nil {
		return fmt.Errorf("folder %s is not writable: %w", d.Path(), err)
	}
	return d.Remove(probe)
}

// checkText rejects strings that are not UTF-8.
func checkText(field, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8: %w", field, adapters.ErrInvalid)
	}
	return nil
}

// EnsureTicket returns the folder mirroring t.UpstreamID, creating it when
// there is none. A new folder appears complete or not at all: it is built
// under a hidden name and renamed into place (see create.go).
func (a *Adapter) EnsureTicket(ctx context.Context, t adapters.Ticket) (adapters.Ref, error) {
	if err := a.writable("ensure ticket"); err != nil {
		return "", err
	}
	switch {
	case strings.TrimSpace(t.UpstreamID) == "":
		return "", fmt.Errorf("ensure ticket: upstream id is empty: %w", adapters.ErrInvalid)
	case len(t.UpstreamID) > 200 || strings.ContainsFunc(t.UpstreamID, isControl):
		return "", fmt.Errorf("ensure ticket %q: upstream id is longer than 200 bytes or holds control characters: %w", clip(t.UpstreamID), adapters.ErrInvalid)
	}
	for _, fv := range [][2]string{{"upstream id", t.UpstreamID}, {"department", t.Department}, {"task description", t.TaskDescription}, {"comments", t.Comments}} {
		if err := checkText(fv[0], fv[1]); err != nil {
			return "", fmt.Errorf("ensure ticket %q: %w", clip(t.UpstreamID), err)
		}
	}
	ref, err := a.ensure(ctx, t)
	if err != nil {
		return "", fmt.Errorf("ensure ticket %s: %w", t.UpstreamID, err)
	}
	return ref, nil
}

// Append adds msgs to the ticket's thread, skipping those it holds.
func (a *Adapter) Append(ctx context.Context, ref adapters.Ref, msgs []adapters.Message) ([]adapters.Appended, error) {
	if err := a.writable("append"); err != nil {
		return nil, err
	}
	for i, m := range msgs {
		var err error
		switch {
		case strings.TrimSpace(m.UpstreamID) == "":
			err = fmt.Errorf("message %d: upstream id is empty: %w", i+1, adapters.ErrInvalid)
		case strings.TrimSpace(m.Body) == "":
			err = fmt.Errorf("message %d (%s): body is empty: %w", i+1, m.UpstreamID, adapters.ErrInvalid)
		default:
			for _, fv := range [][2]string{{"upstream id", m.UpstreamID}, {"body", m.Body}, {"author name", m.AuthorName}, {"author type", string(m.AuthorType)}} {
				if e := checkText(fv[0], fv[1]); e != nil && err == nil {
					err = fmt.Errorf("message %d (%s): %w", i+1, clip(m.UpstreamID), e)
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("append to %s: %w", ref, err)
		}
	}
	var out []adapters.Appended
	err := a.do(ctx, func() error {
		t, err := a.load(ref)
		if err != nil {
			return err
		}
		out = make([]adapters.Appended, 0, len(msgs))
		added := false
		for _, m := range msgs {
			if e := t.byUpstream(m.UpstreamID); e != nil {
				out = append(out, adapters.Appended{UpstreamID: m.UpstreamID, HelpdeskID: e.ID, Existed: true})
				continue
			}
			e := entry{
				ID: t.nextID(), Kind: kindMessage, Source: sourceUpstream, UpstreamID: m.UpstreamID,
				AuthorType: string(m.AuthorType), AuthorName: m.AuthorName, Public: m.Public,
				Body: m.Body, At: m.CreatedAt.UTC(),
			}
			t.Thread = append(t.Thread, e)
			out = append(out, adapters.Appended{UpstreamID: m.UpstreamID, HelpdeskID: e.ID})
			added = true
		}
		if !added {
			// Mend a thread.md a crash left stale.
			dir, err := a.ticketFolder(t)
			if err != nil {
				return err
			}
			defer dir.Close()
			a.pending[dir.Path()] = true
			return a.render(dir, t)
		}
		return a.saveGrouped(t)
	})
	if err != nil {
		return nil, fmt.Errorf("append to %s: %w", ref, err)
	}
	return out, nil
}

// SetStatus sets the ticket's status to the word s maps to.
func (a *Adapter) SetStatus(ctx context.Context, ref adapters.Ref, s guestapi.Status) error {
	if err := a.writable("set status"); err != nil {
		return err
	}
	if !s.Known() {
		return fmt.Errorf("set status of %s: unknown status %q (want one of new, assigned, in_progress, done, completed, confirmed, cancelled): %w", ref, s, adapters.ErrInvalid)
	}
	err := a.do(ctx, func() error {
		t, err := a.load(ref)
		if err != nil {
			return err
		}
		h := a.status.Down(s)
		if t.Status == h {
			return nil
		}
		t.Status = h
		t.Thread = append(t.Thread, entry{ID: t.nextID(), Kind: kindStatus, Source: sourceBridge, Status: h, At: time.Now().UTC()})
		return a.saveGrouped(t)
	})
	if err != nil {
		return fmt.Errorf("set status of %s: %w", ref, err)
	}
	return nil
}

// Changes picks up the outbox and reports the events after cursor (a
// sequence number of processed/), oldest first.
func (a *Adapter) Changes(ctx context.Context, cursor adapters.Cursor) ([]adapters.Event, adapters.Cursor, error) {
	if err := a.writable("changes"); err != nil {
		return nil, cursor, err
	}
	var after int64
	if cursor != "" {
		n, err := strconv.ParseInt(string(cursor), 10, 64)
		if err != nil || n < 0 {
			return nil, cursor, fmt.Errorf("read changes: cursor %q is not a sequence number: %w", cursor, adapters.ErrInvalid)
		}
		after = n
	}
	var evs []adapters.Event
	next := after
	err := a.do(ctx, func() error {
		if err := a.ingest(ctx, after); err != nil {
			return err
		}
		var err error
		evs, next, err = a.report(ctx, after)
		return err
	})
	if err != nil {
		return nil, cursor, fmt.Errorf("read changes: %w", err)
	}
	return evs, adapters.Cursor(strconv.FormatInt(next, 10)), nil
}

// Lookup finds the folder mirroring upstreamID by the ids in ticket.json,
// with the replies and notes of the outbox that Changes recorded there.
func (a *Adapter) Lookup(ctx context.Context, upstreamID string) (adapters.Found, bool, error) {
	if strings.TrimSpace(upstreamID) == "" {
		return adapters.Found{}, false, fmt.Errorf("look up ticket: upstream id is empty: %w", adapters.ErrInvalid)
	}
	var f adapters.Found
	var ok bool
	err := a.do(ctx, func() error {
		t, err := a.find(upstreamID)
		if t != nil {
			f, ok = t.found(a.status), true
			f.Events = a.events(t)
		}
		return err
	})
	if err != nil {
		return adapters.Found{}, false, fmt.Errorf("look up ticket %s: %w", upstreamID, err)
	}
	return f, ok, nil
}

// MarkSent records in ticket.json (and shows in thread.md) that an outbox
// event was delivered upstream.
func (a *Adapter) MarkSent(ctx context.Context, ref adapters.Ref, eventID, upstreamMessageID string) error {
	if err := a.writable("mark sent"); err != nil {
		return err
	}
	if eventID == "" {
		return fmt.Errorf("mark sent on %s: event id is empty: %w", ref, adapters.ErrInvalid)
	}
	err := a.do(ctx, func() error {
		t, err := a.load(ref)
		if err != nil {
			return err
		}
		for i, s := range t.Sent {
			if s.EventID == eventID {
				if s.UpstreamMessageID == upstreamMessageID {
					return nil
				}
				t.Sent[i].UpstreamMessageID = upstreamMessageID
				return a.save(t)
			}
		}
		t.Sent = append(t.Sent, sentRecord{EventID: eventID, UpstreamMessageID: upstreamMessageID, At: time.Now().UTC()})
		return a.save(t)
	})
	if err != nil {
		return fmt.Errorf("mark sent %s on %s: %w", eventID, ref, err)
	}
	return nil
}

// outboxReadme is outbox/README.txt.
func outboxReadme(statuses []string) string {
	return `This is the outbox of the ticketbridge files helpdesk.

To answer a guest request, drop a text file here. It is picked up on the
next cycle and moved to processed/ (or, when something is wrong with it,
to failed/ next to a .error.txt that says what). Write the file under a
name ending in .tmp and rename it when it is complete; hidden files and
*.tmp files are left alone.

    ticket: 2026-03-14-housekeeping-3f2a9c1b
    kind: reply
    author: Anna (front desk)

    Your towels are on their way.

ticket  the ticket's folder name (under tickets/) or its upstream id, or
        the start of either, 8 characters at least (the short id, e.g.
        3f2a9c1b), that no other ticket's shares
kind    reply  a public answer: the guest sees it
        note   an internal note: only staff see it
        status a status change: add "status: <status>" and no text
author  your name as the guest request shows it (optional)
status  for kind status: one of ` + strings.Join(statuses, ", ") + `

Or a .json file: {"ticket": "...", "kind": "reply", "author": "...", "body": "..."}
`
}

// checkReadOnly is Check without a write: see Check.
func (a *Adapter) checkReadOnly() error {
	for _, d := range []string{a.dir, filepath.Join(a.dir, ticketsDir), a.outboxDir(), a.processedDir(), a.failedDir()} {
		if err := adapters.CanMakeDir(d); err != nil {
			return fmt.Errorf("check files helpdesk: %w", err)
		}
	}
	return nil
}
