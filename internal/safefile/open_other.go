//go:build !unix

package safefile

// openFlags is empty where the system has no O_NOFOLLOW: the callers'
// os.SameFile check against the listed file still tells a swapped one.
const openFlags = 0

func isLink(error) bool { return false }
