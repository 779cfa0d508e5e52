// Command printversion prints what version.Get returns, for the test that
// builds it with the release scripts' -ldflags.
package main

import (
	"fmt"

	"github.com/ticketbridge/ticketbridge/internal/version"
)

func main() {
	v, c, _ := version.Get()
	fmt.Printf("%s %s\n", v, c)
}
