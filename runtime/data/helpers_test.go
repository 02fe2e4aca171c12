package data

import (
	"github.com/shmlang/shm/internal/shared"
	"math"
	"slices"
	"testing"
)

// want describes an expected value.
type want struct {
	name  string
	dims  []int
	data  []float64
	isInt bool
}

// checkValues compares values with the expected ones, NaN equal to NaN.
func checkValues(t *testing.T, got []*Value, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		names := make([]string, len(got))
		for i, v := range got {
			names[i] = v.Name
		}
		t.Fatalf("got %d values %v, want %d", len(got), names, len(wants))
	}
	for i, w := range wants {
		v := got[i]
		if v.Name != w.name {
			t.Errorf("value %d: name %q, want %q", i, v.Name, w.name)
		}
		if !slices.Equal(v.Dims, w.dims) {
			t.Errorf("%s: dims %v, want %v", w.name, v.Dims, w.dims)
		}
		if !sameFloats(v.Data, w.data) {
			t.Errorf("%s: data %v, want %v", w.name, v.Data, w.data)
		}
		if v.IsInt != w.isInt {
			t.Errorf("%s: IsInt %v, want %v", w.name, v.IsInt, w.isInt)
		}
		checkInvariants(t, v)
	}
}

// sameFloats compares two slices exactly, counting NaN equal to NaN.
func sameFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
}

// checkInvariants checks what must hold for any value a reader returns.
func checkInvariants(t testing.TB, v *Value) {
	t.Helper()
	n := 1
	for _, d := range v.Dims {
		if d < 0 {
			t.Fatalf("%s: negative dim in %v", v.Name, v.Dims)
		}
		n *= d
	}
	if n != len(v.Data) {
		t.Fatalf("%s: dims %v hold %d entries but Data has %d", v.Name, v.Dims, n, len(v.Data))
	}
	if v.Origin() == "" || v.File() == "" {
		t.Fatalf("%s: no origin", v.Name)
	}
	// Where and Index on the first and last few entries.
	for k := range len(v.Data) {
		if k >= 3 && k < len(v.Data)-3 {
			continue
		}
		if v.Where(k) == "" {
			t.Fatalf("%s: empty Where(%d)", v.Name, k)
		}
		idx := v.Index(k)
		if len(idx) != len(v.Dims) {
			t.Fatalf("%s: Index(%d) = %v for dims %v", v.Name, k, idx, v.Dims)
		}
		flat := 0
		for d, i := range idx {
			if i < 0 || i >= v.Dims[d] {
				t.Fatalf("%s: Index(%d) = %v out of dims %v", v.Name, k, idx, v.Dims)
			}
			flat = flat*v.Dims[d] + i
		}
		if flat != k {
			t.Fatalf("%s: Index(%d) = %v maps back to %d", v.Name, k, idx, flat)
		}
	}
}

// sharedDir returns ../shared beside the repository root.
func sharedDir(t *testing.T) string { return shared.Path(t) }
