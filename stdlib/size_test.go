package stdlib

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shmlang/shm/internal/sysmem"

	"github.com/shmlang/shm/lang"
)

// TestFootprint: a container's size check counts its scalars and, for an
// array of vectors, row vectors or matrices, a Value header per element,
// so that array[N] vector[2] counts about nine times array[N, 2] real.
func TestFootprint(t *testing.T) {
	h := float64(ElementWords)
	if h < 10 {
		t.Fatalf("a Value is %v words; the test assumes its headers dominate small vectors", h)
	}
	for _, tc := range []struct {
		name string
		typ  lang.Type
		dims []int
		want float64
	}{
		{"real", lang.RealType, nil, 1},
		{"vector", lang.VectorType, []int{5}, 5},
		{"matrix", lang.MatrixType, []int{3, 4}, 12},
		{"array of reals", lang.ArrayOf(lang.RealType, 2), []int{1000, 2}, 2000},
		{"array of ints", lang.ArrayOf(lang.IntType, 1), []int{7}, 7},
		{"array of vectors", lang.ArrayOf(lang.VectorType, 1), []int{1000, 2}, 2000 + 1000*h},
		{"2-d array of row vectors", lang.ArrayOf(lang.RowVectorType, 2), []int{10, 3, 4}, 120 + 30*h},
		{"array of matrices", lang.ArrayOf(lang.MatrixType, 1), []int{5, 2, 3}, 30 + 5*h},
		{"empty array of vectors", lang.ArrayOf(lang.VectorType, 1), []int{0, 2}, 0},
	} {
		if got := Footprint(tc.typ, tc.dims); got != tc.want {
			t.Errorf("%s %v: Footprint = %v, want %v", tc.name, tc.dims, got, tc.want)
		}
	}
	if vec, flat := Footprint(lang.ArrayOf(lang.VectorType, 1), []int{20000000, 2}), Footprint(lang.ArrayOf(lang.RealType, 2), []int{20000000, 2}); vec < 8*flat {
		t.Errorf("array[N] vector[2] counts %v words, array[N, 2] real %v: the headers are not counted", vec, flat)
	}
}

// TestMemoryError: a refusal for want of memory is told from a built-in's
// other failures (errors.Is ErrMemory), also wrapped with the function's
// name, so that the run stops instead of rejecting the proposal.
func TestMemoryError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"MemoryErrorf", MemoryErrorf("a result of %d elements", 5), true},
		{"wrapped", fmt.Errorf("rep_vector: %w", MemoryErrorf("too big")), true},
		{"CheckSize beyond the memory", CheckSize(1<<40, 1<<20), sysmem.MaxElements() > 0}, // unknown memory: no bound
		{"a negative size", CheckSize(-1), false},
		{"another failure", errors.New("rep_vector: x is NaN"), false},
	} {
		if got := errors.Is(tc.err, ErrMemory); got != tc.want {
			t.Errorf("%s: errors.Is(%v, ErrMemory) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
