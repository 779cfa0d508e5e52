//go:build unix

package safefile

// SetWalkStep sets the hook run before each element of OpenDir's walk.
func SetWalkStep(f func(at string)) { walkStep = f }

// SetHandOverStep sets the hook run as HandOver reaches each entry.
func SetHandOverStep(f func(path string)) { beforeHandOver = f }
