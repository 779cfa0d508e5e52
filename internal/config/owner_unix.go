//go:build unix

package config

import (
	"io/fs"
	"syscall"
)

// FileOwner returns the owner and group ids of the file fi describes.
func FileOwner(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}
