package autodiff_test

import (
	"fmt"
	"math"

	"github.com/shmlang/shm/autodiff"
)

// The log density of y ~ normal(mu, sigma) over three observations, with
// parameters theta = (mu, log sigma) on the unconstrained scale, and its
// gradient with respect to theta.
func Example() {
	t := autodiff.NewTape()

	// Data are bound once as constants and kept across evaluations.
	y := t.ConstVec([]float64{1.2, 0.4, 2.0})
	if err := t.Keep(); err != nil {
		panic(err)
	}

	theta := []float64{1.0, math.Log(0.5)}
	grad := make([]float64, len(theta))
	for range 2 { // every evaluation reuses the tape's memory
		t.Reset()
		th := t.VarVec(theta)
		mu, logSigma := t.Index(th, 0), t.Index(th, 1)
		sigma := t.Exp(logSigma)

		// target = -0.5 Σ ((y - mu)/sigma)² - N log sigma + log sigma (Jacobian):
		// here Σ z² = 5.6, ∂/∂mu = Σ z/sigma = 2.4, ∂/∂log sigma = Σ z² - 2 = 3.6.
		z := t.Div(t.Sub(y, mu), sigma)
		lp := t.Mul(t.Const(-0.5), t.DotSelf(z))
		lp = t.Sub(lp, t.Mul(t.Const(2), logSigma))

		if err := t.Gradient(lp); err != nil {
			panic(err)
		}
		if err := t.VarGrad(grad); err != nil {
			panic(err)
		}
		fmt.Printf("lp = %.4f, grad = [%.4f %.4f]\n", t.Scalar(lp), grad[0], grad[1])
	}
	// Output:
	// lp = -1.4137, grad = [2.4000 3.6000]
	// lp = -1.4137, grad = [2.4000 3.6000]
}

// A vectorized density as one node whose partial derivatives are computed
// in the forward pass.
func ExampleTape_ScalarPartials() {
	t := autodiff.NewTape()
	x := t.VarVec([]float64{0.5, -1, 2})

	// lp = Σ -x²/2, ∂lp/∂x_i = -x_i
	p := t.ScalarPartials(x)
	xs, d := t.Val(x), p.D(0)
	var lp float64
	for i, v := range xs {
		lp -= v * v / 2
		d[i] = -v
	}
	p.Out()[0] = lp

	if err := t.Gradient(p.Value()); err != nil {
		panic(err)
	}
	fmt.Println(t.Scalar(p.Value()), t.Adj(x))
	// Output:
	// -2.625 [-0.5 1 -2]
}

// prodNode is a custom node y = Π x_i with its own backward pass
// (∂y/∂x_i = y / x_i for nonzero x).
type prodNode struct{}

func (prodNode) Backward(t *autodiff.Tape, out autodiff.Value, ins []autodiff.Value) {
	g, y := t.Adj(out)[0], t.Val(out)[0]
	x, ax := t.Val(ins[0]), t.Adj(ins[0])
	for i, xi := range x {
		ax[i] += g * y / xi
	}
}

// A primitive that brings its own backward pass: register it with its
// inputs, then write its forward value into the output.
func ExampleTape_Custom() {
	t := autodiff.NewTape()
	x := t.VarVec([]float64{2, 3, 4})
	node := prodNode{} // a caller-owned node, reusable across evaluations

	y := t.Custom(node, autodiff.ScalarShape(), x)
	p := 1.0
	for _, v := range t.Val(x) {
		p *= v
	}
	t.Val(y)[0] = p

	if err := t.Gradient(y); err != nil {
		panic(err)
	}
	fmt.Println(t.Scalar(y), t.Adj(x))
	// Output:
	// 24 [12 8 6]
}
