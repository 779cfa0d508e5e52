package files

import (
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"time"
)

// File modes before the umask: the owner and the group (the support team)
// may read and write; the service's umask narrows them.
const (
	dirMode  fs.FileMode = 0o770
	fileMode fs.FileMode = 0o660
)

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
