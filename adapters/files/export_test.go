package files

// SetBeforeOpen sets a function called with the path of every outbox or
// processed file just before the adapter opens it: between the listing and
// the reading, where a test swaps the file.
func SetBeforeOpen(a *Adapter, f func(path string)) { a.beforeOpen = f }

// Scans returns how many times the adapter read its tickets folder.
func Scans(a *Adapter) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.scans
}
