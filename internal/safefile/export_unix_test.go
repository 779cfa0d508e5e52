//go:build unix

package safefile

// SetWalkStep sets the hook run before each element of OpenDir's walk.
func SetWalkStep(f func(at string)) { walkStep = f }
