package files

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/atomicfile"
)

// File modes before the umask: the owner and the group (the support team)
// may read and write; the service's umask narrows them.
const (
	dirMode  fs.FileMode = 0o770
	fileMode fs.FileMode = 0o660
)

// writeFileAtomic replaces path with data so that a reader, or a crash at
// any point, sees either the old content or the new one.
func writeFileAtomic(path string, data []byte) error {
	return atomicfile.WriteFile(path, data, fileMode)
}

// replaceFile replaces path with data like writeFileAtomic, but leaves the
// sync of its folder to the caller (see atomicfile.Replace).
func replaceFile(path string, data []byte) error {
	return atomicfile.Replace(path, data, fileMode)
}

// renameDurable renames from to to (both in directories that exist) and
// syncs both directories.
func renameDurable(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("move %s: %w", filepath.Base(from), err)
	}
	if err := atomicfile.SyncDir(filepath.Dir(to)); err != nil {
		return err
	}
	if filepath.Dir(from) != filepath.Dir(to) {
		return atomicfile.SyncDir(filepath.Dir(from))
	}
	return nil
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// stampSettle is how old a folder's modification time must be before it
// is trusted to move at the next change: a filesystem with a coarse clock
// can give a change in the same tick the same time.
const stampSettle = 2 * time.Second

// emptyStamp remembers a folder that was last read empty (of what its
// reader takes), as stat saw it just before that read: while the folder
// is the same one with the same modification time, nothing was created
// in it, renamed into it or removed from it since, and it is still empty.
// A quiet cycle then asks the folder one stat, not an open, a read and a
// close.
type emptyStamp struct {
	fi fs.FileInfo // nil: not known to be empty
}

// unchanged reports whether dir is still the empty folder last recorded.
// It returns what stat saw, for record after the read it then needs, and
// stat's error.
func (s *emptyStamp) unchanged(dir string) (bool, fs.FileInfo, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		s.fi = nil
		return false, nil, err
	}
	return s.fi != nil && os.SameFile(fi, s.fi) && fi.ModTime().Equal(s.fi.ModTime()), fi, nil
}

// record notes what a read of the folder found: before is what stat saw
// before the read (nil: the read failed), empty whether it held nothing
// the reader takes. An empty folder is remembered when its time is old
// enough to trust (stampSettle).
func (s *emptyStamp) record(before fs.FileInfo, empty bool) {
	s.fi = nil
	if before != nil && empty && time.Since(before.ModTime()) > stampSettle {
		s.fi = before
	}
}
