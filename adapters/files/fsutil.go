package files

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// File modes before the umask: the owner and the group (the support team)
// may read and write; the service's umask narrows them.
const (
	dirMode  fs.FileMode = 0o770
	fileMode fs.FileMode = 0o660
)

// writeFileAtomic replaces path with data so that a reader, or a crash at
// any point, sees either the old content or the new one: it writes a
// hidden temporary file next to path, syncs it, renames it over path and
// syncs the directory.
func writeFileAtomic(path string, data []byte) (err error) {
	dir, base := filepath.Split(path)
	tmp := filepath.Join(dir, "."+base+"."+randomSuffix()+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", path, err)
	}
	return syncDir(filepath.Clean(dir))
}

// syncDir makes a rename or creation in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// renameDurable renames from to to (both in directories that exist) and
// syncs both directories.
func renameDurable(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("move %s: %w", filepath.Base(from), err)
	}
	if err := syncDir(filepath.Dir(to)); err != nil {
		return err
	}
	if filepath.Dir(from) != filepath.Dir(to) {
		return syncDir(filepath.Dir(from))
	}
	return nil
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
