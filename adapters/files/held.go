package files

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/safefile"
)

var _ adapters.SetAsideCounter = (*Adapter)(nil)

// SetAside counts the outbox files this adapter moved to failed/ since it
// was made (see [adapters.SetAsideCounter]).
func (a *Adapter) SetAside() uint64 { return a.setAside.Load() }

// maxReasonBytes bounds what Held reads of an explanation: its first line.
const maxReasonBytes = 2048

// Held lists the outbox files waiting in failed/, oldest first, each with
// the first line of its explanation (see [adapters.Holder]). It reads the
// folder's names and the explanations only, never a file the team wrote,
// and reads an explanation again only when it changed. A file leaves the
// list when it is moved back into the outbox or removed; an explanation
// without its file is not listed.
func (a *Adapter) Held(context.Context) []adapters.HeldError {
	a.heldMu.Lock()
	defer a.heldMu.Unlock()
	same, before, err := a.failedEmpty.unchanged(a.failedDir())
	if same || errors.Is(err, fs.ErrNotExist) { // none set aside yet
		a.heldCache = nil
		return nil
	}
	des, err := os.ReadDir(a.failedDir())
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			a.log.Warn("list the outbox files set aside", slog.Any("error", err), slog.String("op", "held"))
		}
		return nil
	}
	a.failedEmpty.record(before, len(des) == 0)
	names := make(map[string]bool, len(des))
	for _, de := range des {
		names[de.Name()] = true
	}
	seen := make(map[string]heldFile, len(des))
	var out []adapters.HeldError
	for _, de := range des {
		name := de.Name()
		if !strings.HasSuffix(name, errorSuffix) || !names[strings.TrimSuffix(name, errorSuffix)] {
			continue
		}
		info, err := de.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		h, ok := a.heldCache[name]
		if !ok || !h.mod.Equal(info.ModTime()) || h.size != info.Size() {
			h = heldFile{mod: info.ModTime(), size: info.Size()}
			h.original, h.reason = a.readReason(filepath.Join(a.failedDir(), name))
		}
		seen[name] = h
		file := strings.TrimSuffix(name, errorSuffix)
		if h.original == "" {
			h.original = file
		}
		out = append(out, adapters.HeldError{
			Op:    "outbox file " + h.original,
			Need:  h.reason,
			File:  path.Join(outboxDir, failedDir, file),
			Since: h.mod.UTC(),
		})
	}
	a.heldCache = seen
	slices.SortFunc(out, func(x, y adapters.HeldError) int {
		if c := x.Since.Compare(y.Since); c != 0 {
			return c
		}
		return strings.Compare(x.File, y.File)
	})
	return out
}

// heldFile is what Held read of one explanation.
type heldFile struct {
	mod      time.Time
	size     int64
	original string // the name the file had in the outbox; "" when unknown
	reason   string
}

// readReason reads the first line of an explanation [Adapter.reject]
// wrote: `The outbox file "<name>" was not sent: <reason>.` A line of
// another form (edited by hand) is the reason as it stands.
func (a *Adapter) readReason(path string) (original, reason string) {
	b, err := readHead(path)
	if err != nil {
		return "", "its explanation cannot be read; see the .error.txt next to it"
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	text := strings.Map(func(r rune) rune {
		if isControl(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(strings.TrimSpace(string(line)), "?"))
	if rest, ok := strings.CutPrefix(text, reasonPrefix); ok {
		if q, err := strconv.QuotedPrefix(rest); err == nil {
			if after, ok := strings.CutPrefix(rest[len(q):], reasonMiddle); ok {
				name, _ := strconv.Unquote(q)
				return name, strings.TrimSuffix(after, ".")
			}
		}
	}
	if text == "" {
		return "", "its explanation is empty; see the .error.txt next to it"
	}
	return "", clipReason(text)
}

// readHead reads the start of an explanation, up to maxReasonBytes, not
// through a link.
func readHead(path string) ([]byte, error) {
	f, _, err := safefile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxReasonBytes))
}

// clipReason shortens a reason edited by hand for a list.
func clipReason(s string) string {
	if r := []rune(s); len(r) > 300 {
		return string(r[:300]) + "…"
	}
	return s
}

// The first line of an explanation: reasonPrefix, the quoted name,
// reasonMiddle, the reason, a full stop.
const (
	reasonPrefix = "The outbox file "
	reasonMiddle = " was not sent: "
)
