//go:build unix

package safefile

import (
	"errors"
	"syscall"
)

// openFlags: O_NOFOLLOW refuses a symbolic link at the last element,
// O_NONBLOCK keeps a named pipe from holding the open (it has no effect on
// a regular file).
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// isLink reports whether err is what open with O_NOFOLLOW returns for a
// symbolic link: ELOOP on Linux and most systems, EMLINK on FreeBSD.
func isLink(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)
}
