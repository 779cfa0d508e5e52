package safefile

import "golang.org/x/sys/unix"

// renameNoReplace renames atomically, failing with EEXIST where the new
// name is taken.
func renameNoReplace(fromFD int, from string, toFD int, to string) error {
	return unix.Renameat2(fromFD, from, toFD, to, unix.RENAME_NOREPLACE)
}
