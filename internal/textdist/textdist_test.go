package textdist

import "testing"

func TestLevenshtein(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "abc", 3}, {"abc", "abc", 0},
		{"kitten", "sitting", 3}, {"2f7c5e3a", "2f7c5e3b", 1}, {"2f7c53ea", "2f7c5e3a", 2},
	} {
		if got := Levenshtein(c.a, c.b); got != c.want {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestCommonPrefix(t *testing.T) {
	if got := CommonPrefix("2f7c5e3a", "2f7c9"); got != 4 {
		t.Errorf("CommonPrefix = %d, want 4", got)
	}
	if got := CommonPrefix("", "x"); got != 0 {
		t.Errorf("CommonPrefix of empty = %d", got)
	}
}
