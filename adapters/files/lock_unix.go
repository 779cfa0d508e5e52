//go:build unix

package files

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes the exclusive advisory lock on f without waiting; ok is
// false when another process (or another adapter on the same folder) holds
// it.
func tryLock(f *os.File) (ok bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// unlock releases the lock tryLock took.
func unlock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
