// Package textdist measures how far apart two short texts are, to suggest
// what a person probably meant: a variable name, a subcommand, a ticket
// folder. It owns nothing and imports the standard library only.
package textdist

// Levenshtein is the edit distance of a and b, byte-wise: the fewest
// insertions, deletions and substitutions of a byte that turn a into b.
// It is meant for names (ASCII); its cost is len(a)*len(b).
func Levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// CommonPrefix is the length in bytes of the longest prefix a and b share.
func CommonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
