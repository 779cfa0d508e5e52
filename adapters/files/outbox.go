package files

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/safefile"
)

// OutboxItem is one outbox file, parsed: what a person asks the bridge to
// carry upstream.
type OutboxItem struct {
	Ticket string             // a ticket folder's name or an upstream ticket id
	Kind   adapters.EventKind // reply, note or status
	Author string             // the person's name as the guest request shows it; may be empty
	Status string             // kind status: the status word, as written
	Body   string             // kind reply and note: the text
}

// maxAuthorRunes caps an author name.
const maxAuthorRunes = 200

// ParseOutbox parses an outbox file's content. A name ending in .json is
// read as one JSON object {"ticket", "kind", "author", "body", "status"};
// anything else as header lines ("key: value": ticket, kind, author,
// status), a blank line, and the body. It checks the form only (the ticket
// and the status word are checked against the folder by the adapter), and
// every error wraps [adapters.ErrInvalid] and says what to fix: which line
// or field, and what is wrong with it, never quoting the file's content (it
// may not be what the writer meant to drop, and failed/ is read by others).
func ParseOutbox(name string, data []byte) (OutboxItem, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a byte order mark, as some editors write
	if !utf8.Valid(data) {
		return OutboxItem{}, invalid("the file is not UTF-8 text; save it as UTF-8")
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return OutboxItem{}, invalid("the file holds NUL bytes; it must be plain text")
	}
	text := strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\r", "\n")
	var it OutboxItem
	var lines map[string]int
	var err error
	if strings.EqualFold(filepath.Ext(name), ".json") {
		it, err = parseJSON(text)
	} else {
		it, lines, err = parseText(text)
	}
	if err != nil {
		return OutboxItem{}, err
	}
	return it, it.check(lines)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), adapters.ErrInvalid)
}

var outboxKeys = []string{"ticket", "kind", "author", "status"}

// parseText parses the header format; lines maps each header given to its
// line number, for the errors of [OutboxItem.check].
func parseText(text string) (OutboxItem, map[string]int, error) {
	var it OutboxItem
	seen := map[string]int{}
	lines := strings.Split(text, "\n")
	i := 0
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++ // blank lines before the header
	}
	for ; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "" {
			i++
			break
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return it, nil, invalid("line %d: want a header line \"key: value\" (ticket, kind, author, status), then a blank line, then the text", i+1)
		}
		key := strings.ToLower(strings.TrimSpace(k))
		if !slices.Contains(outboxKeys, key) {
			return it, nil, invalid("line %d: unknown header (want ticket, kind, author or status, then a blank line before the text)", i+1)
		}
		if seen[key] > 0 {
			return it, nil, invalid("line %d: header %q given twice", i+1, key)
		}
		seen[key] = i + 1
		v = strings.TrimSpace(v)
		switch key {
		case "ticket":
			it.Ticket = v
		case "kind":
			it.Kind = adapters.EventKind(strings.ToLower(v))
		case "author":
			it.Author = v
		case "status":
			it.Status = v
		}
	}
	if i < len(lines) {
		it.Body = strings.Join(lines[i:], "\n")
	}
	it.Body = trimBody(it.Body)
	return it, seen, nil
}

func parseJSON(text string) (OutboxItem, error) {
	var w struct {
		Ticket string `json:"ticket"`
		Kind   string `json:"kind"`
		Author string `json:"author"`
		Body   string `json:"body"`
		Status string `json:"status"`
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return OutboxItem{}, invalid("not a JSON object {\"ticket\", \"kind\", \"author\", \"body\", \"status\"}: %v", safefile.JSONError([]byte(text), err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return OutboxItem{}, invalid("more than one JSON value in the file; put one object per file")
	}
	return OutboxItem{
		Ticket: strings.TrimSpace(w.Ticket),
		Kind:   adapters.EventKind(strings.ToLower(strings.TrimSpace(w.Kind))),
		Author: strings.TrimSpace(w.Author),
		Status: strings.TrimSpace(w.Status),
		Body:   trimBody(strings.ReplaceAll(strings.ReplaceAll(w.Body, "\r\n", "\n"), "\r", "\n")),
	}, nil
}

// trimBody drops blank lines before the text and trailing white space after
// it, keeping the first line's indentation.
func trimBody(s string) string {
	s = strings.TrimRight(s, " \t\n")
	for {
		line, rest, ok := strings.Cut(s, "\n")
		if !ok || strings.TrimSpace(line) != "" {
			break
		}
		s = rest
	}
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return s
}

// check validates the fields of a parsed item. lines maps the headers of a
// text file to their line numbers (nil for JSON), for the errors to name
// them; the errors name the field, not its value.
func (it OutboxItem) check(lines map[string]int) error {
	at := func(key string) string {
		if n := lines[key]; n > 0 {
			return fmt.Sprintf("line %d: ", n)
		}
		return ""
	}
	if it.Ticket == "" {
		return invalid("ticket is missing: name the ticket's folder or its upstream id")
	}
	if strings.ContainsFunc(it.Ticket, isControl) {
		return invalid("%sticket holds control characters", at("ticket"))
	}
	if utf8.RuneCountInString(it.Author) > maxAuthorRunes {
		return invalid("%sauthor is longer than %d characters", at("author"), maxAuthorRunes)
	}
	if strings.ContainsFunc(it.Author, isControl) {
		return invalid("%sauthor holds control characters", at("author"))
	}
	if strings.ContainsFunc(it.Status, isControl) || utf8.RuneCountInString(it.Status) > 60 {
		return invalid("%sstatus is not a status word (at most 60 characters, no control characters)", at("status"))
	}
	switch it.Kind {
	case adapters.EventReply, adapters.EventNote:
		if it.Body == "" {
			return invalid("kind %s needs a text: write it after a blank line below the header", it.Kind)
		}
		if it.Status != "" {
			return invalid("%sstatus is only for kind status; drop a separate status file", at("status"))
		}
	case adapters.EventStatus:
		if it.Status == "" {
			return invalid("kind status needs a status line, e.g. \"status: done\"")
		}
		if it.Body != "" {
			return invalid("kind status takes no text; drop a note for the explanation")
		}
	case "":
		return invalid("kind is missing: want reply, note or status")
	default:
		return invalid("%skind is not one of reply, note, status", at("kind"))
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// clip shortens s for an error message.
func clip(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return s
}

// skipName reports whether an outbox entry is not (yet) for the adapter:
// hidden files, files being written (*.tmp, *.part, editor backups) and
// the outbox's own README.
func skipName(name string) bool {
	lower := strings.ToLower(name)
	switch {
	case strings.HasPrefix(name, "."), strings.HasSuffix(name, "~"),
		strings.HasPrefix(name, "#"),
		strings.HasSuffix(lower, ".tmp"), strings.HasSuffix(lower, ".part"),
		strings.HasSuffix(lower, ".swp"), strings.HasSuffix(lower, ".crdownload"),
		strings.HasPrefix(lower, "readme"):
		return true
	}
	return false
}

// seqDigits is the width of the sequence number that prefixes processed
// names, so that they sort in order.
const seqDigits = 12

// processedSeq returns the sequence number of a name in processed/.
func processedSeq(name string) (int64, bool) {
	digits, _, ok := strings.Cut(name, "-")
	if !ok || len(digits) < seqDigits {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// processedName returns the name of outbox file name under sequence seq,
// keeping the original name readable but within file-name limits.
func processedName(seq int64, name string) string {
	const maxName = 200
	if len(name) > maxName {
		cut := maxName
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut]
	}
	return fmt.Sprintf("%0*d-%s", seqDigits, seq, name)
}

// processed is one file of processed/.
type processed struct {
	seq  int64
	name string
}

// listProcessed returns processed/'s files in sequence order and the
// highest sequence number ever given (also from .last-sequence, which
// survives the pruning of processed/).
func (a *Adapter) listProcessed() ([]processed, int64, error) {
	des, err := os.ReadDir(a.processedDir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) { // missing: read-only, nothing yet
		return nil, 0, fmt.Errorf("list processed outbox files: %w", err)
	}
	var out []processed
	var last int64
	for _, de := range des {
		if seq, ok := processedSeq(de.Name()); ok && de.Type().IsRegular() {
			out = append(out, processed{seq, de.Name()})
			last = max(last, seq)
		}
	}
	slices.SortFunc(out, func(x, y processed) int { return cmp.Compare(x.seq, y.seq) })
	if b, _, err := safefile.ReadFile(filepath.Join(a.processedDir(), lastSeqFile), 64); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			last = max(last, n)
		}
	}
	return out, last, nil
}

// candidate is an outbox file waiting to be picked up.
type candidate struct {
	name string
	mod  time.Time
	info fs.FileInfo // as listed, of the name itself (not what a link points to)
}

// ingest moves every complete file in the outbox either into processed/,
// under the next sequence number, applying it to its ticket, or into
// failed/ with an explanation. floor is the caller's cursor: new numbers
// are always above it, even when processed/ was emptied.
//
// Crash safety: a file is renamed into processed/ before it is applied,
// and applying is idempotent by its processed name, so a crash in between
// is mended by the next report (which applies what it reports). An invalid
// file gets its explanation written before it is moved, so failed/ never
// holds a file without one.
func (a *Adapter) ingest(ctx context.Context, floor int64) error {
	same, before, _ := a.outboxEmpty.unchanged(a.outboxDir()) // an error shows in the read
	if same {
		return nil
	}
	des, err := os.ReadDir(a.outboxDir())
	if err != nil {
		return fmt.Errorf("list outbox: %w", err)
	}
	now := time.Now()
	var cands []candidate
	files := 0
	defer func() { a.outboxEmpty.record(before, files == 0) }()
	for _, de := range des {
		name := de.Name()
		if skipName(name) || de.IsDir() {
			continue
		}
		files++
		info, err := de.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read outbox file %s: %w", name, err)
		}
		mod := info.ModTime()
		if age := now.Sub(mod); age < a.settle && age > -time.Minute {
			continue // maybe still being written; next time
		}
		cands = append(cands, candidate{name, mod, info})
	}
	if len(cands) == 0 {
		return nil
	}
	slices.SortFunc(cands, func(x, y candidate) int {
		if c := x.mod.Compare(y.mod); c != 0 {
			return c
		}
		return strings.Compare(x.name, y.name)
	})
	_, last, err := a.listProcessed()
	if err != nil {
		return err
	}
	next := max(last, floor) + 1
	for _, c := range cands {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read outbox: %w", err)
		}
		accepted, err := a.take(c, next)
		if accepted {
			next++
		}
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			if errors.Is(err, safefile.ErrLink) {
				// processed/ or failed/ made a link: no file can be
				// taken until someone looks, so the cycle says so.
				return fmt.Errorf("outbox: %w", err)
			}
			// One file (or its ticket's folder) in trouble stops neither
			// the others nor the cycle: it stays where it is and is
			// tried again next time.
			a.log.Warn("outbox file not taken; tried again next cycle", slog.Any("error", err), slog.String("op", "outbox"), slog.String("file", c.name))
		}
	}
	return nil
}

// take handles one outbox file; accepted says whether it used seq.
func (a *Adapter) take(c candidate, seq int64) (accepted bool, err error) {
	src := filepath.Join(a.outboxDir(), c.name)
	const notRegular = "it is not a regular file (a link, a pipe or a device); drop a plain file"
	if !c.info.Mode().IsRegular() {
		return false, a.reject(c.name, notRegular)
	}
	data, info, err := a.readOutboxFile(src, c.info, a.maxOutbox)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errReplaced) {
		return false, nil // taken away or replaced meanwhile: listed afresh next time
	}
	if errors.Is(err, safefile.ErrNotRegular) {
		return false, a.reject(c.name, notRegular)
	}
	if err == nil && (!info.ModTime().Equal(c.mod) || info.Size() != int64(len(data))) {
		// Written to since it was listed (an editor saving in place, a
		// slow copy): not complete yet; next time.
		return false, nil
	}
	if errors.Is(err, safefile.ErrTooBig) {
		return false, a.reject(c.name, fmt.Sprintf("it is larger than %d bytes (TICKETBRIDGE_FILES_MAX_OUTBOX_BYTES)", a.maxOutbox))
	}
	if err != nil {
		return false, fmt.Errorf("read outbox file %s: %w", c.name, err)
	}
	it, err := ParseOutbox(c.name, data)
	if err != nil {
		return false, a.reject(c.name, strings.TrimSuffix(err.Error(), ": "+adapters.ErrInvalid.Error()))
	}
	t, why, err := a.resolve(it.Ticket, "")
	if err != nil {
		return false, err
	}
	if t == nil {
		return false, a.reject(c.name, why)
	}
	var hd string
	if it.Kind == adapters.EventStatus {
		var ok bool
		if hd, _, ok = a.matchStatus(it.Status); !ok {
			return false, a.reject(c.name, fmt.Sprintf("status: not one the bridge carries upstream (want one of %s)", strings.Join(a.statusWords(), ", ")))
		}
	}
	pname := processedName(seq, c.name)
	outbox, processed, err := a.outboxAnd(processedDir)
	if err != nil {
		return false, err
	}
	defer outbox.Close()
	defer processed.Close()
	if err := outbox.Move(c.name, processed, pname); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("move %s: %w", c.name, err)
	}
	if err := outbox.Sync(); err != nil {
		return true, err
	}
	if err := processed.WriteFile(lastSeqFile, []byte(strconv.FormatInt(seq, 10)+"\n"), fileMode); err != nil {
		return true, err
	}
	a.log.Info("picked up outbox file", slog.String("op", "outbox"), slog.String("ticket", t.UpstreamID), slog.String("file", c.name), slog.String("event", pname), slog.String("kind", string(it.Kind)))
	ev := a.event(pname, t, it, hd, c.mod)
	return true, a.apply(t, ev, hd)
}

// errReplaced: the file at a path is no longer the one listed there.
var errReplaced = errors.New("replaced since it was listed")

// readOutboxFile reads an outbox or processed file, at most limit bytes.
// The outbox is written by the service's group, who may swap a listed file
// for a link to a file only the service may read (its API key): the file
// is opened without following a link, must be a regular file, and must be
// the one listed (listed; nil means the one at path now, by Lstat). info
// describes the open file after the reading.
func (a *Adapter) readOutboxFile(path string, listed fs.FileInfo, limit int64) (data []byte, info fs.FileInfo, err error) {
	if listed == nil {
		if listed, err = os.Lstat(path); err != nil {
			return nil, nil, err
		}
	}
	if a.beforeOpen != nil {
		a.beforeOpen(path)
	}
	f, opened, err := safefile.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if !os.SameFile(listed, opened) {
		return nil, nil, fmt.Errorf("read %s: %w", filepath.Base(path), errReplaced)
	}
	if data, err = safefile.Read(f, limit); err != nil {
		return nil, nil, err
	}
	if info, err = f.Stat(); err != nil {
		return nil, nil, err
	}
	return data, info, nil
}

// outboxAnd opens the outbox and its folder sub (processed/ or failed/)
// for a move, following no link (see sub): what the outbox holds goes
// nowhere else than where the adapter made its folders.
func (a *Adapter) outboxAnd(sub string) (outbox, dir *safefile.Dir, err error) {
	if outbox, err = a.sub(outboxDir); err != nil {
		return nil, nil, err
	}
	if dir, err = outbox.Sub(sub); err != nil {
		outbox.Close()
		return nil, nil, err
	}
	return outbox, dir, nil
}

// reject moves an outbox file to failed/, next to <name>.error.txt saying
// what is wrong with it.
func (a *Adapter) reject(name, reason string) error {
	outbox, failed, err := a.outboxAnd(failedDir)
	if err != nil {
		return err
	}
	defer outbox.Close()
	defer failed.Close()
	target := name
	for i := 2; ; i++ {
		there1, err1 := failed.Exists(target)
		there2, err2 := failed.Exists(target + errorSuffix)
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		if !there1 && !there2 {
			break
		}
		target = fmt.Sprintf("%s.%d", name, i)
	}
	// The first line is what Held lists: keep it one line, in this form.
	msg := fmt.Sprintf(reasonPrefix+"%q"+reasonMiddle+"%s.\n\n"+
		"It was set aside at %s. Fix it and move it back into the outbox folder\n"+
		"(write it under a name ending in .tmp and rename it when complete),\n"+
		"or delete it and this explanation: until then it is listed by\n"+
		"`ticketbridge status`, `ticketbridge check` and the status page.\n"+
		"See outbox/README.txt for the format.\n", name, reason, time.Now().UTC().Format(time.RFC3339))
	if err := failed.WriteFile(target+errorSuffix, []byte(msg), fileMode); err != nil {
		return err
	}
	if err := outbox.Move(name, failed, target); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // taken away meanwhile: Held lists no explanation without its file
		}
		return fmt.Errorf("move %s: %w", name, err)
	}
	if err := errors.Join(failed.Sync(), outbox.Sync()); err != nil {
		return err
	}
	a.setAside.Add(1)
	a.log.Warn("outbox file set aside", slog.String("op", "outbox"), slog.String("file", name), slog.String("failed", target), slog.Any("error", reason))
	return nil
}

// event builds the event of an accepted outbox file.
func (a *Adapter) event(id string, t *ticketFile, it OutboxItem, hd string, at time.Time) adapters.Event {
	ev := adapters.Event{
		ID: id, Ref: adapters.Ref(t.Folder), UpstreamTicketID: t.UpstreamID,
		Kind: it.Kind, AuthorName: it.Author, At: at.UTC(),
	}
	switch it.Kind {
	case adapters.EventStatus:
		ev.Status, _ = a.status.Up(hd)
	default:
		ev.Body = it.Body
	}
	return ev
}

// apply records an outbox event in its ticket, once.
func (a *Adapter) apply(t *ticketFile, ev adapters.Event, hd string) error {
	if t.byEvent(ev.ID) != nil {
		return nil
	}
	e := entry{ID: t.nextID(), Source: sourceOutbox, EventID: ev.ID, AuthorName: ev.AuthorName, At: ev.At}
	switch ev.Kind {
	case adapters.EventReply:
		e.Kind, e.Public, e.Body = kindReply, true, ev.Body
	case adapters.EventNote:
		e.Kind, e.Body = kindNote, ev.Body
	case adapters.EventStatus:
		e.Kind, e.Status = kindStatus, hd
		t.Status = hd
	}
	t.Thread = append(t.Thread, e)
	return a.save(t)
}

// report returns the events of processed/ after seq, at most a page, each
// applied to its ticket, and the sequence number to resume after.
func (a *Adapter) report(ctx context.Context, after int64) ([]adapters.Event, int64, error) {
	if a.reportedAll(after) {
		return nil, after, nil
	}
	dir, statErr := os.Stat(a.processedDir())
	files, last, err := a.listProcessed()
	if err != nil {
		return nil, after, err
	}
	cursor := after
	defer func() {
		// processed/ as listed is stamped when the cursor reached its end
		// and its time is not so recent that a coarse clock could give a
		// later change the same one (as the tickets folder's scan).
		a.processedStamp = time.Time{}
		if statErr == nil && cursor >= last && time.Since(dir.ModTime()) > stampSettle {
			a.processedStamp, a.processedLast = dir.ModTime(), last
		}
	}()
	var evs []adapters.Event
	for _, p := range files {
		if p.seq <= after {
			continue
		}
		if len(evs) == a.page {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, after, fmt.Errorf("read changes: %w", err)
		}
		ev, ok, err := a.reread(p)
		if err != nil {
			// Its ticket's folder cannot be read or written (a broken
			// ticket.json, a permission): the events up to here are
			// reported, this one and those after it wait, in order.
			a.log.Warn("processed outbox file waits until its ticket folder can be read and written", slog.Any("error", err), slog.String("op", "outbox"), slog.String("file", p.name))
			break
		}
		cursor = p.seq
		if ok {
			evs = append(evs, ev)
		}
	}
	return evs, cursor, nil
}

// reportedAll reports whether every event of processed/ is at or before
// after, without listing it: a cursor at the end of processed/ as the last
// report saw it whole, and processed/ unchanged since (its modification
// time, which each file taken or pruned moves). It is what a quiet cycle
// asks, and listing processed/, which keeps every file ever taken, grew
// with the helpdesk's age.
func (a *Adapter) reportedAll(after int64) bool {
	if a.processedStamp.IsZero() || after < a.processedLast {
		return false
	}
	fi, err := os.Stat(a.processedDir())
	return err == nil && fi.ModTime().Equal(a.processedStamp)
}

// reread rebuilds the event of a processed file and makes sure its ticket
// holds it. ok is false for a file that no longer makes an event (edited
// or its ticket removed by hand); it is logged and passed over.
func (a *Adapter) reread(p processed) (adapters.Event, bool, error) {
	path := filepath.Join(a.processedDir(), p.name)
	data, info, err := a.readOutboxFile(path, nil, maxMaxOutboxBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return adapters.Event{}, false, nil
	}
	if errors.Is(err, safefile.ErrNotRegular) || errors.Is(err, errReplaced) {
		a.log.Warn("processed outbox file is no longer a plain file (replaced by a link?); passing over it", slog.String("op", "outbox"), slog.String("file", p.name))
		return adapters.Event{}, false, nil
	}
	if err != nil {
		return adapters.Event{}, false, fmt.Errorf("read processed outbox file %s: %w", p.name, err)
	}
	original := p.name[strings.IndexByte(p.name, '-')+1:]
	it, err := ParseOutbox(original, data)
	if err != nil {
		a.log.Warn("processed outbox file no longer parses; passing over it", slog.String("op", "outbox"), slog.String("file", p.name), slog.Any("error", err))
		return adapters.Event{}, false, nil
	}
	t, _, err := a.resolve(it.Ticket, p.name)
	if err != nil {
		return adapters.Event{}, false, err
	}
	if t == nil {
		a.log.Warn("the ticket of a processed outbox file is gone; passing over it", slog.String("op", "outbox"), slog.String("file", p.name))
		return adapters.Event{}, false, nil
	}
	var hd string
	if it.Kind == adapters.EventStatus {
		var ok bool
		if hd, _, ok = a.matchStatus(it.Status); !ok {
			a.log.Warn("the status of a processed outbox file is no longer mapped; passing over it", slog.String("op", "outbox"), slog.String("file", p.name), slog.String("status", it.Status))
			return adapters.Event{}, false, nil
		}
	}
	ev := a.event(p.name, t, it, hd, info.ModTime())
	if err := a.apply(t, ev, hd); err != nil {
		return adapters.Event{}, false, err
	}
	return ev, true, nil
}

// matchStatus finds the helpdesk status a person meant: the mapping's own
// word, compared without regard to case, with spaces and dashes read as
// underscores ("In progress" is in_progress).
func (a *Adapter) matchStatus(word string) (helpdesk string, up guestapi.Status, ok bool) {
	want := normStatus(word)
	for _, k := range a.statusWords() {
		if normStatus(k) == want {
			up, _ := a.status.Up(k)
			return k, up, true
		}
	}
	return "", "", false
}

func normStatus(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.NewReplacer(" ", "_", "-", "_").Replace(s)
}

// statusWords returns the helpdesk statuses the adapter carries upstream,
// sorted.
func (a *Adapter) statusWords() []string {
	out := make([]string, 0, len(a.status.FromHelpdesk))
	for k := range a.status.FromHelpdesk {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
