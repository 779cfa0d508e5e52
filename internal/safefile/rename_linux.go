package safefile

import (
	"errors"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames atomically, failing with EEXIST where the new
// name is taken. A filesystem without renameat2's flags (NFS, older FUSE)
// answers EINVAL: there the check and the rename are two steps, as on
// other systems (rename_unix.go).
func renameNoReplace(fromFD int, from string, toFD int, to string) error {
	err := unix.Renameat2(fromFD, from, toFD, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return renameCheckFirst(fromFD, from, toFD, to)
	}
	return err
}
