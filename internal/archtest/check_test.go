package archtest

import (
	"slices"
	"testing"
)

// TestCheck runs the checker on a made-up module, so that a rule that
// cannot fail is seen to fail.
func TestCheck(t *testing.T) {
	g := graph{
		"low":         {Path: "low"},
		"mid":         {Path: "mid", Imports: []string{"low"}},
		"top":         {Path: "top", Imports: []string{"mid"}},
		"lib":         {Path: "lib", Imports: []string{"mid"}, Tests: []string{"top"}},
		"base":        {Path: "base", Tests: []string{"kit"}},
		"kit":         {Path: "kit", Imports: []string{"top"}},
		"leaf":        {Path: "leaf", Imports: []string{"leaf/helper"}},
		"leaf/helper": {Path: "leaf/helper", Imports: []string{"low"}},
	}
	rules := []rule{
		{name: "low-is-low", from: []string{"low"}, deny: []string{"..."}},
		{name: "no-top", from: []string{"mid", "lib", "base"}, deny: []string{"top"}, tests: true},
		{name: "leaf", from: []string{"leaf/..."}, only: []string{"leaf/..."}},
	}
	type key struct {
		from, to string
		test     bool
		chain    string
	}
	keys := func(vs []violation) []key {
		var ks []key
		for _, v := range vs {
			ks = append(ks, key{v.from, v.to, v.test, v.String()})
		}
		return ks
	}

	found, unused := check(g, rules, nil)
	want := []key{
		{"base", "top", true, `base must not depend on top (rule "no-top"): base (tests) -> kit -> top`},
		{"leaf", "low", false, `leaf must not depend on low (rule "leaf"): leaf -> leaf/helper -> low`},
		{"leaf/helper", "low", false, `leaf/helper must not depend on low (rule "leaf"): leaf/helper -> low`},
		{"lib", "top", true, `lib must not depend on top (rule "no-top"): lib (tests) -> top`},
	}
	if got := keys(found); !slices.Equal(got, want) {
		t.Errorf("violations:\n got %v\nwant %v", got, want)
	}
	if unused != nil {
		t.Errorf("unused allowances: %v", unused)
	}

	allowed := []allowance{
		{from: "lib", to: "top", why: "known"},
		{from: "mid", to: "top", why: "gone"},
	}
	found, unused = check(g, rules, allowed)
	if got := keys(found); !slices.Equal(got, slices.Delete(slices.Clone(want), 3, 4)) {
		t.Errorf("violations with an allowance: %v", got)
	}
	if !slices.Equal(unused, allowed[1:]) {
		t.Errorf("unused allowances: got %v, want %v", unused, allowed[1:])
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"...", "a/b", true},
		{"sync/...", "sync", true},
		{"sync/...", "sync/x", true},
		{"sync/...", "syncx", false},
		{"sync", "sync/x", false},
		{"adapters/*/*fake", "adapters/zendesk/zendeskfake", true},
		{"adapters/*/*fake", "adapters/zendesk", false},
	} {
		if got := match(c.pattern, c.path); got != c.want {
			t.Errorf("match(%q, %q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
}
