//go:build unix

package safefile

import (
	"errors"

	"golang.org/x/sys/unix"
)

// renameCheckFirst refuses a taken new name, then renames: without
// renameat2's RENAME_NOREPLACE the check and the rename are two steps, so
// an entry made in between is replaced.
func renameCheckFirst(fromFD int, from string, toFD int, to string) error {
	var st unix.Stat_t
	err := unix.Fstatat(toFD, to, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == nil {
		return unix.EEXIST
	}
	if !errors.Is(err, unix.ENOENT) {
		return err
	}
	return unix.Renameat(fromFD, from, toFD, to)
}
