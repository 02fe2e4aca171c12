package ot_test

import (
	"fmt"
	"math"

	"github.com/shmlang/shm/stdlib/ot"
)

// A loss evaluated many times against fixed data: the y–y term is computed
// once, each evaluation returns S and its gradient with respect to the
// simulated points, and repeated evaluations allocate nothing.
func Example() {
	// Data: 3 points in 2-D with uniform weights. (The printed values agree
	// with an independent NumPy implementation and central differences.)
	y := []float64{0, 0, 1, 0, 0, 1}
	logB := []float64{-math.Log(3), -math.Log(3), -math.Log(3)}
	// Simulated: 2 points.
	x := []float64{0.2, 0.1, 0.6, 0.7}
	logA := []float64{-math.Log(2), -math.Log(2)}

	opt := ot.Options{Eps: 0.1, Balanced: true, Iters: 50, Grad: ot.GradUnrolled}
	w := ot.NewWorkspace(2, 3, 2)
	defer w.Close()
	yy, err := w.SelfTerm(y, logB, opt)
	if err != nil {
		panic(err)
	}
	grad := &ot.Grad{X: make([]float64, len(x))} // only ∂S/∂x
	res, err := w.Divergence(x, y, logA, logB, opt, yy, grad)
	if err != nil {
		panic(err)
	}
	fmt.Printf("S = %.6f\n", res.Divergence)
	fmt.Printf("dS/dx = %.4f\n", grad.X)

	// Balanced mode checks the masses.
	_, err = w.Divergence(x, y, []float64{0, 0}, logB, opt, nil, nil)
	fmt.Println(err)
	// Output:
	// S = 0.339636
	// dS/dx = [-0.1201 0.0921 0.2535 0.0413]
	// ot: balanced Sinkhorn needs equal masses, but mass(a) = 2 and mass(b) = 1 (normalize the weights or use unbalanced mode)
}
