package config

import (
	"fmt"
	"strings"
	"testing"
)

// TestHotelNeverPrintsItsKey: a hotel's resolved configuration printed
// whole, as a log line or an error might, shows no API key.
func TestHotelNeverPrintsItsKey(t *testing.T) {
	h := Hotel{File: HotelFile{Name: "north"}, Key: "rta_secretvalue"}
	for _, format := range []string{"%v", "%+v", "%#v"} {
		if s := fmt.Sprintf(format, h); strings.Contains(s, "secretvalue") {
			t.Errorf("%s prints the key: %s", format, s)
		}
	}
}
