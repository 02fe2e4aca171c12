package autodiff

import (
	"fmt"
	"math"
)

// NumericGradient sets grad to the gradient of f at x by central finite
// differences with one step of Richardson extrapolation:
//
//	D(h) = (f(x+h e_i) - f(x-h e_i)) / 2h,  grad_i = (4 D(h/2) - D(h)) / 3,
//
// with h = 1e-4·max(1, |x_i|), which makes the truncation error O(h⁴) and
// keeps rounding error near 1e-12 relative for smooth f. x is restored
// before NumericGradient returns. It panics if len(grad) != len(x).
func NumericGradient(f func(x []float64) float64, x, grad []float64) {
	if len(grad) != len(x) {
		panic("autodiff: NumericGradient: len(grad) != len(x)")
	}
	d := func(i int, h float64) float64 {
		xi := x[i]
		x[i] = xi + h
		fp := f(x)
		x[i] = xi - h
		fm := f(x)
		x[i] = xi
		return (fp - fm) / (2 * h)
	}
	for i := range x {
		h := 1e-4 * math.Max(1, math.Abs(x[i]))
		grad[i] = (4*d(i, h/2) - d(i, h)) / 3
	}
}

// GradientError reports the worst coordinate found by CheckGradient.
type GradientError struct {
	Coord    int     // index into the variable vector
	Analytic float64 // gradient from the tape
	Numeric  float64 // finite-difference gradient
	Err      float64 // |Analytic-Numeric| / max(1, |Numeric|)
	Tol      float64
}

func (e *GradientError) Error() string {
	return fmt.Sprintf("autodiff: gradient mismatch at coordinate %d: analytic %.12g, numeric %.12g, error %.3g > tolerance %.3g",
		e.Coord, e.Analytic, e.Numeric, e.Err, e.Tol)
}

// CheckGradient compares the tape gradient of f at x0 with NumericGradient.
// f builds a scalar on t from x, a vector of independent variables holding
// x0 (or a perturbed copy); it is called many times, each on a Reset tape.
// The error measure of a coordinate is |analytic - numeric| / max(1,
// |numeric|), relative for large gradients and absolute for small ones. It
// returns a *GradientError for the worst coordinate if that exceeds tol, or
// the error met while evaluating f (a non-scalar result, a tape error, a
// non-finite value).
func CheckGradient(f func(t *Tape, x Value) Value, x0 []float64, tol float64) error {
	t := NewTape()
	x := append([]float64(nil), x0...)
	eval := func(x []float64) (float64, error) {
		t.Reset()
		y := f(t, t.VarVec(x))
		if err := t.Err(); err != nil {
			return math.NaN(), err
		}
		if y.Len() != 1 {
			return math.NaN(), fmt.Errorf("autodiff: CheckGradient: f returned %v, want a scalar", y.Shape())
		}
		return t.Scalar(y), nil
	}
	fx, err := eval(x)
	if err != nil {
		return err
	}
	if math.IsNaN(fx) || math.IsInf(fx, 0) {
		return fmt.Errorf("autodiff: CheckGradient: f(x0) = %v", fx)
	}
	t.Reset()
	y := f(t, t.VarVec(x))
	if err := t.Gradient(y); err != nil {
		return err
	}
	analytic := make([]float64, len(x))
	if err := t.VarGrad(analytic); err != nil {
		return err
	}
	numeric := make([]float64, len(x))
	var evalErr error
	NumericGradient(func(x []float64) float64 {
		v, err := eval(x)
		if err != nil && evalErr == nil {
			evalErr = err
		}
		return v
	}, x, numeric)
	if evalErr != nil {
		return evalErr
	}
	worst := &GradientError{Coord: -1, Tol: tol}
	for i := range x {
		e := math.Abs(analytic[i]-numeric[i]) / math.Max(1, math.Abs(numeric[i]))
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		if worst.Coord < 0 || e > worst.Err {
			*worst = GradientError{Coord: i, Analytic: analytic[i], Numeric: numeric[i], Err: e, Tol: tol}
		}
	}
	if worst.Coord >= 0 && worst.Err > tol {
		return worst
	}
	return nil
}
