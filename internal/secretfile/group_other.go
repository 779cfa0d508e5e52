//go:build !unix

package secretfile

import "io/fs"

// fileGroup says files have no Unix group here: a file its group may read
// is refused.
func fileGroup(fs.FileInfo) (int, bool) { return 0, false }

// fileOwner says files have no Unix owner here: none is refused for its
// owner.
func fileOwner(fs.FileInfo) (int, bool) { return 0, false }
