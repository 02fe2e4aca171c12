package ot

import (
	"math"
	"testing"
)

// TestFarApartGradients: measures 1e12 apart at eps = 1e3, where the
// potentials (about 1e24) are rounded by more than eps, so that the stored
// potentials no longer normalize the backward pass's softmax weights: the
// dense path renormalizes those rows and its gradients stay finite and
// right; the sparse and scaling paths give NaN there and solve the
// evaluation again on the dense path. Whatever the plan, (x_i − y_j) ≈ −1e12 for every pair, so
// ∂S/∂x_i ≈ −2·a_i·1e12 and ∂S/∂y_j ≈ 2·b_j·1e12.
func TestFarApartGradients(t *testing.T) {
	x := []float64{0.1, -0.3, 0.7}
	y := []float64{1e12 + 0.2, 1e12 - 0.5}
	la := []float64{-math.Log(3), -math.Log(3), -math.Log(3)}
	lb := []float64{-math.Log(2), -math.Log(2)}
	for _, path := range []Path{PathDense, PathSparse, PathScaling} {
		for _, iters := range []int{1, 2, 5} {
			w := NewWorkspace(3, 2, 1)
			w.SetPath(path)
			g := &Grad{X: make([]float64, 3), Y: make([]float64, 2)}
			if _, err := w.Divergence(x, y, la, lb, Options{Eps: 1000, Iters: iters, Balanced: true}, nil, g); err != nil {
				t.Fatal(err)
			}
			for i, v := range g.X {
				if want := -2.0 / 3 * 1e12; !(math.Abs(v-want) <= 1e-6*math.Abs(want)) {
					t.Errorf("%v path, T = %d: ∂S/∂x[%d] = %g, want about %g", path, iters, i+1, v, want)
				}
			}
			for j, v := range g.Y {
				if want := 1e12; !(math.Abs(v-want) <= 1e-6*want) {
					t.Errorf("%v path, T = %d: ∂S/∂y[%d] = %g, want about %g", path, iters, j+1, v, want)
				}
			}
		}
	}
}
