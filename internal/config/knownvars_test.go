package config

import (
	"context"
	"os"
	"regexp"
	"slices"
	"testing"
)

// TestKnownVariablesDocumented: the variables the code reads and those
// config.example.env documents are the same set.
func TestKnownVariablesDocumented(t *testing.T) {
	b, err := os.ReadFile("../../config.example.env")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#?(TICKETBRIDGE_[A-Z0-9_]+)=`).FindAllStringSubmatch(string(b), -1) {
		documented[m[1]] = true
	}
	known := KnownVariables(context.Background())
	if len(known) < 40 {
		t.Fatalf("only %d variables known: %v", len(known), known)
	}
	for _, k := range known {
		if !documented[k] {
			t.Errorf("%s is read but config.example.env does not show it", k)
		}
	}
	for k := range documented {
		if !slices.Contains(known, k) {
			t.Errorf("config.example.env shows %s, which nothing reads", k)
		}
	}
	if got := Closest("TICKETBRIDGE_ADAPTOR", known); got != "TICKETBRIDGE_ADAPTER" {
		t.Errorf("closest to TICKETBRIDGE_ADAPTOR: %q", got)
	}
	if got := Closest("TICKETBRIDGE_COMPLETELY_DIFFERENT", known); got != "" {
		t.Errorf("closest to a name like none: %q, want none", got)
	}
}
