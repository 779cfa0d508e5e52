package files

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

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
