//go:build unix && !linux

package safefile

// renameNoReplace renames, failing with EEXIST where the new name is taken
// (see renameCheckFirst: two steps on systems without renameat2).
func renameNoReplace(fromFD int, from string, toFD int, to string) error {
	return renameCheckFirst(fromFD, from, toFD, to)
}
