package adapters

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// CanMakeDir says, without writing anything, whether this process may use
// dir as a folder of its own: dir is a folder it may write, or dir does
// not exist and its nearest existing parent is a folder it may write (so
// that the adapter makes dir at its first start). A read-only Check
// (Deps.ReadOnly, as `ticketbridge check` opens adapters) uses it, so that
// checking makes no folder.
func CanMakeDir(dir string) error {
	p := dir
	for {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			parent := filepath.Dir(p)
			if parent == p {
				return fmt.Errorf("no folder above %s exists", dir)
			}
			p = parent
			continue
		}
		if err != nil {
			return fmt.Errorf("folder %s: %w", p, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a folder", p)
		}
		if err := writableDir(p); err != nil {
			if p != dir {
				return fmt.Errorf("folder %s does not exist, and %s cannot be written to make it: %w", dir, p, err)
			}
			return fmt.Errorf("folder %s is not writable: %w", dir, err)
		}
		return nil
	}
}
