//go:build !unix

package adapters

// writableDir cannot ask without writing where access(2) is missing; the
// adapter's first start says.
func writableDir(string) error { return nil }
