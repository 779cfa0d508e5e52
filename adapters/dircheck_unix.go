//go:build unix

package adapters

import "syscall"

// writableDir asks the system whether this process may make and remove
// files in dir, without doing so (access(2), W_OK|X_OK).
func writableDir(dir string) error { return syscall.Access(dir, 0x2|0x1) }
