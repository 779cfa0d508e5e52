package files

// SetBeforeOpen sets a function called with the path of every outbox or
// processed file just before the adapter opens it: between the listing and
// the reading, where a test swaps the file.
func SetBeforeOpen(a *Adapter, f func(path string)) { a.beforeOpen = f }
