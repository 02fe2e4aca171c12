package ir

import (
	"fmt"
	"unicode/utf8"
)

// suggest returns `; did you mean "x"?` for the candidate closest to name,
// or "" when none is close enough.
func suggest(name string, candidates []string) string {
	if best := Closest(name, candidates); best != "" {
		return fmt.Sprintf("; did you mean %q?", best)
	}
	return ""
}

// Closest returns the candidate closest to name in edit distance, or ""
// when none is close enough to be a likely typo. Ties go to the
// alphabetically first candidate. Candidates whose length alone puts them
// out of reach are not compared, so that a scope of many thousand names
// costs a scan, not as many edit distances.
func Closest(name string, candidates []string) string {
	n := utf8.RuneCountInString(name)
	limit := 1
	switch {
	case n > 6:
		limit = 3
	case n > 3:
		limit = 2
	}
	best, bestD := "", limit+1
	for _, c := range candidates {
		if c == name {
			continue
		}
		if diff := utf8.RuneCountInString(c) - n; diff > limit || -diff > limit {
			continue
		}
		if d := editDistance(name, c); d < bestD || d == bestD && c < best {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Damerau–Levenshtein distance (with adjacent
// transpositions) between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	n, m := len(ra), len(rb)
	d := make([][]int, n+1)
	for i := range d {
		d[i] = make([]int, m+1)
		d[i][0] = i
	}
	for j := 0; j <= m; j++ {
		d[0][j] = j
	}
	for i := 1; i <= n; i++ {
		for j := 1; j <= m; j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[n][m]
}
