//go:build !unix

package files

import "os"

// tryLock does nothing where flock is missing: one adapter per folder is
// then the operator's to ensure.
func tryLock(*os.File) (bool, error) { return true, nil }

func unlock(*os.File) error { return nil }
