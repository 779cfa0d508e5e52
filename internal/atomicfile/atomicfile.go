// Package atomicfile writes files so that a reader, or a crash at any
// point, sees either the old content or the new one, never a part: the
// content goes to a temporary file next to the target, which is synced,
// renamed (or linked) into place, and the directory synced so that the
// rename itself survives a power loss.
//
// It is the one place the daemon does this (the status snapshot, the files
// and webhook adapters' folders, state backups). It is not a lock: two
// writers of one path each win in turn, and the last rename stays.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// TempPrefix starts the name of every temporary file of this package: the
// files are hidden, and a directory's owner can tell a leftover of a crash
// by it (see [IsTemp]).
const TempPrefix = ".tmp-"

// syncs counts the fsyncs this package made, of files and directories.
var syncs atomic.Int64

// Syncs returns how many fsyncs, of files and directories, this package
// made in the process so far: what a benchmark divides by its work.
func Syncs() int64 { return syncs.Load() }

// CountSyncs adds n to what [Syncs] reports, for a writer that syncs by
// descriptor outside this package (safefile.Dir), so that a benchmark's
// count of fsyncs stays whole.
func CountSyncs(n int64) { syncs.Add(n) }

// IsTemp reports whether name (a base name) is a temporary file of this
// package, left behind when a crash came before its rename.
func IsTemp(name string) bool { return strings.HasPrefix(name, TempPrefix) }

// WriteFile replaces path with data; see [Write].
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return Write(path, perm, writeAll(data))
}

// Write replaces path with what fill writes. The file is created with perm
// before the umask, like os.WriteFile. When fill or any step fails, path is
// left as it was and the temporary file removed.
func Write(path string, perm fs.FileMode, fill func(w io.Writer) error) error {
	if err := replace(path, perm, fill); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// Replace replaces path with data like [WriteFile], but leaves the sync
// of its directory to the caller: whenever path is there it is whole, but
// until the caller's [SyncDir] a crash may bring the old content back. It
// is for writers that sync a directory once for many files.
func Replace(path string, data []byte, perm fs.FileMode) error {
	return replace(path, perm, writeAll(data))
}

// WriteNew writes data to path, which must not exist, and syncs it,
// leaving the sync of its directory to the caller: it is for the files of
// a folder made under a hidden name, which appear with the folder's
// rename. When a step fails, the file is removed.
func WriteNew(path string, data []byte, perm fs.FileMode) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(path)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	syncs.Add(1)
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

// WriteVolatile replaces path with data like [WriteFile], whole or not
// at all for every reader, but syncs nothing: after a power loss the file
// may hold the old content, or be empty or damaged. It is for files the
// writer makes again soon after it starts (a status snapshot), whose
// fsyncs would be all of their cost.
func WriteVolatile(path string, data []byte, perm fs.FileMode) error {
	tmp, err := writeTemp(path, perm, writeAll(data), false)
	if err != nil {
		return err
	}
	return rename(tmp, path)
}

// writeAll returns the fill of a file that holds data.
func writeAll(data []byte) func(w io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}

// replace writes a synced temporary file and renames it to path.
func replace(path string, perm fs.FileMode, fill func(w io.Writer) error) error {
	tmp, err := writeTemp(path, perm, fill, true)
	if err != nil {
		return err
	}
	return rename(tmp, path)
}

// rename moves the temporary file tmp to path, removing it on failure.
func rename(tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Create writes data to path, which must not exist yet: where a file of
// that name appeared in the meantime, it fails with an error matching
// fs.ErrExist and leaves that file alone. It links the synced temporary
// file into place, so no reader sees a part either.
func Create(path string, data []byte, perm fs.FileMode) error {
	tmp, err := writeTemp(path, perm, writeAll(data), true)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("write %s: %w", path, fs.ErrExist)
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	return SyncDir(filepath.Dir(path))
}

// writeTemp writes a temporary file next to path, synced when sync is
// set, and returns its name.
func writeTemp(path string, perm fs.FileMode, fill func(w io.Writer) error, sync bool) (_ string, err error) {
	base := filepath.Base(path)
	if len(base) > 64 { // keep the temporary name within NAME_MAX
		base = strings.ToValidUTF8(base[:64], "")
	}
	tmp := filepath.Join(filepath.Dir(path), TempPrefix+base+"."+randomSuffix())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err := fill(f); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if sync {
		syncs.Add(1)
		if err := f.Sync(); err != nil {
			return "", fmt.Errorf("sync %s: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("close %s: %w", path, err)
	}
	return tmp, nil
}

// SyncDir makes a creation, rename or removal in dir durable. A file
// system that cannot sync a directory is not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	defer d.Close()
	syncs.Add(1)
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
