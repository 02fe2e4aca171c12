package runtime

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/runtime/data"
	"gonum.org/v1/gonum/mat"
)

// specialCase is a constrained type with element sizes and the positions
// (row-major) of the values that determine an element: the coordinates in
// which the transform is a bijection, for its Jacobian.
type specialCase struct {
	s     lang.Special
	sizes []int
	free  func(k int) []int // positions of the free values of an element
}

func lowerPositions(m, n int, strict bool) []int {
	var out []int
	for r := 0; r < m; r++ {
		for c := 0; c < n && c <= r; c++ {
			if c < r || !strict {
				out = append(out, r*n+c)
			}
		}
	}
	return out
}

func specialCases() []specialCase {
	first := func(n int) func(int) []int {
		return func(int) []int {
			out := make([]int, n)
			for i := range out {
				out[i] = i
			}
			return out
		}
	}
	return []specialCase{
		{lang.Simplex, []int{4}, first(3)},
		{lang.Simplex, []int{1}, first(0)},
		{lang.Ordered, []int{4}, first(4)},
		{lang.PositiveOrdered, []int{3}, first(3)},
		{lang.UnitVector, []int{3}, nil},
		{lang.CholeskyFactorCorr, []int{4, 4}, func(int) []int { return lowerPositions(4, 4, true) }},
		{lang.CholeskyFactorCov, []int{4, 2}, func(int) []int { return lowerPositions(4, 2, false) }},
		{lang.CholeskyFactorCov, []int{3, 3}, func(int) []int { return lowerPositions(3, 3, false) }},
		{lang.CorrMatrix, []int{4, 4}, func(int) []int { return lowerPositions(4, 4, true) }},
		{lang.CovMatrix, []int{3, 3}, func(int) []int { return lowerPositions(3, 3, false) }},
	}
}

// evalSpecial runs a transform on a fresh tape.
func evalSpecial(s lang.Special, u []float64, sizes []int) (x []float64, logJ float64) {
	t := autodiff.NewTape()
	xv, lj := specialTypes[s].constrain(t, t.ConstVec(u), sizes)
	return append([]float64(nil), t.Val(xv)...), t.Scalar(lj)
}

// TestSpecialTransforms checks every constrained type: the number of
// unconstrained values, that constrained values pass the check and come
// back through the inverse, and the log-Jacobian against the log
// determinant of the finite-difference Jacobian of the free values.
func TestSpecialTransforms(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tc := range specialCases() {
		name := tc.s.String()
		free, err := ir.FreeSize(tc.s, tc.sizes)
		if err != nil {
			t.Fatal(err)
		}
		for trial := 0; trial < 5; trial++ {
			u := make([]float64, free)
			for i := range u {
				u[i] = rng.NormFloat64()
			}
			x, lj := evalSpecial(tc.s, u, tc.sizes)
			sp := specialTypes[tc.s]
			if err := sp.check(x, tc.sizes); err != nil {
				t.Fatalf("%s %v: constrained value fails its check: %v (%v)", name, tc.sizes, err, x)
			}
			if r2 := dot(u, u); tc.free == nil && math.Abs(lj+0.5*r2) > 1e-12 {
				t.Errorf("%s: log-Jacobian %g, want −‖u‖²/2 = %g", name, lj, -0.5*r2)
			}
			back := sp.unconstrain(x, tc.sizes)
			if tc.s == lang.UnitVector {
				// Not a bijection: the inverse gives a point of the ray.
				u = back
				x, _ = evalSpecial(tc.s, back, tc.sizes)
				back = sp.unconstrain(x, tc.sizes)
			}
			for i := range u {
				if math.Abs(back[i]-u[i]) > 1e-9*math.Max(1, math.Abs(u[i])) {
					t.Errorf("%s %v: unconstrain(constrain(u))[%d] = %g, want %g", name, tc.sizes, i, back[i], u[i])
				}
			}
			if tc.free == nil {
				continue
			}
			pos := tc.free(free)
			if len(pos) != free {
				t.Fatalf("%s %v: %d free positions for %d values", name, tc.sizes, len(pos), free)
			}
			if free == 0 {
				if lj != 0 {
					t.Errorf("%s %v: log-Jacobian %g, want 0", name, tc.sizes, lj)
				}
				continue
			}
			jac := mat.NewDense(free, free, nil)
			const h = 1e-6
			for j := range u {
				up, dn := append([]float64(nil), u...), append([]float64(nil), u...)
				up[j] += h
				dn[j] -= h
				xp, _ := evalSpecial(tc.s, up, tc.sizes)
				xm, _ := evalSpecial(tc.s, dn, tc.sizes)
				for i, p := range pos {
					jac.Set(i, j, (xp[p]-xm[p])/(2*h))
				}
			}
			var lu mat.LU
			lu.Factorize(jac)
			logDet, _ := lu.LogDet()
			if math.Abs(logDet-lj) > 1e-6*math.Max(1, math.Abs(lj)) {
				t.Errorf("%s %v: log-Jacobian %.10g, finite differences %.10g", name, tc.sizes, lj, logDet)
			}
		}
	}
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// TestSpecialChecks: values that are not of their type are refused with
// the reason, as data and as initial values.
func TestSpecialChecks(t *testing.T) {
	cases := []struct {
		s     lang.Special
		sizes []int
		x     []float64
		want  string
	}{
		{lang.Simplex, []int{3}, []float64{0.5, 0.5, 0.1}, "sum to"},
		{lang.Simplex, []int{2}, []float64{1.5, -0.5}, "nonnegative"},
		{lang.Ordered, []int{3}, []float64{1, 1, 2}, "not above"},
		{lang.PositiveOrdered, []int{2}, []float64{-1, 2}, "positive"},
		{lang.UnitVector, []int{2}, []float64{1, 1}, "squared norm"},
		{lang.CholeskyFactorCorr, []int{2, 2}, []float64{1, 0.1, 0, 1}, "lower triangular"},
		{lang.CholeskyFactorCorr, []int{2, 2}, []float64{1, 0, 0.5, 0.5}, "squared norm"},
		{lang.CholeskyFactorCov, []int{2, 2}, []float64{1, 0, 0.5, -1}, "positive"},
		{lang.CorrMatrix, []int{2, 2}, []float64{1, 0.5, 0.4, 1}, "symmetric"},
		{lang.CorrMatrix, []int{2, 2}, []float64{2, 0, 0, 1}, "diagonal"},
		{lang.CovMatrix, []int{2, 2}, []float64{1, 2, 2, 1}, "positive definite"},
	}
	for _, tc := range cases {
		err := specialTypes[tc.s].check(tc.x, tc.sizes)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want an error with %q", tc.s, tc.x, err, tc.want)
		}
	}
}

// TestSpecialDataAndInits: data of a constrained type is checked, initial
// values are mapped to the unconstrained scale and come back unchanged,
// and the output columns are the value's, in Stan's order.
func TestSpecialDataAndInits(t *testing.T) {
	src := `data { simplex[3] w; }
parameters {
  array[2] simplex[3] theta;
  cov_matrix[2] S;
}
model { for (j in 1:2) theta[j] ~ dirichlet(w * 10); }
`
	m, errs := ir.CheckSource("sp.shm", src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	set := &data.Set{}
	set.AddSet(&data.Value{Name: "w", Dims: []int{3}, Data: []float64{0.2, 0.3, 0.6}})
	if _, err := Bind(m, set, Options{Impls: Builtins()}); err == nil || !strings.Contains(err.Error(), "w (simplex[3]) is not a simplex") {
		t.Errorf("bad data: %v", err)
	}
	set = &data.Set{}
	set.AddSet(&data.Value{Name: "w", Dims: []int{3}, Data: []float64{0.2, 0.3, 0.5}})
	bm, err := Bind(m, set, Options{Impls: Builtins()})
	if err != nil {
		t.Fatal(err)
	}
	if bm.Dim() != 2*2+3 {
		t.Errorf("%d unconstrained coordinates, want 7", bm.Dim())
	}
	want := []string{"theta.1.1", "theta.2.1", "theta.1.2", "theta.2.2", "theta.1.3", "theta.2.3", "S.1.1", "S.2.1", "S.1.2", "S.2.2"}
	if got := bm.Columns(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("columns %v, want %v", got, want)
	}
	init := &data.Set{}
	init.AddSet(&data.Value{Name: "theta", Dims: []int{2, 3}, Data: []float64{0.1, 0.2, 0.7, 0.5, 0.25, 0.25}})
	init.AddSet(&data.Value{Name: "S", Dims: []int{2, 2}, Data: []float64{2, 0.5, 0.5, 1}})
	theta, err := bm.Unconstrain(init, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	d, err := bm.NewDensity()
	if err != nil {
		t.Fatal(err)
	}
	row, err := d.Draw(nil, theta, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantRow := []float64{0.1, 0.5, 0.2, 0.25, 0.7, 0.25, 2, 0.5, 0.5, 1}
	for i := range wantRow {
		if math.Abs(row[i]-wantRow[i]) > 1e-12 {
			t.Errorf("column %s = %.15g, want %g", want[i], row[i], wantRow[i])
		}
	}
	bad := &data.Set{}
	bad.AddSet(&data.Value{Name: "theta", Dims: []int{2, 3}, Data: []float64{0.1, 0.2, 0.7, 0.5, 0.5, 0.25}})
	bad.AddSet(&data.Value{Name: "S", Dims: []int{2, 2}, Data: []float64{2, 0.5, 0.5, 1}})
	if _, err := bm.Unconstrain(bad, nil, 0); err == nil || !strings.Contains(err.Error(), "theta[2] (array[2] simplex[3]) is not a simplex") {
		t.Errorf("bad initial value: %v", err)
	}
}
