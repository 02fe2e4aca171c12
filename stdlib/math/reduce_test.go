package mathlib

import (
	"math"
	"testing"
)

func sumOf(xs ...float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

// sampleVar is the textbook two-pass sample variance.
func sampleVar(xs ...float64) float64 {
	m := sumOf(xs...) / float64(len(xs))
	s := 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s / float64(len(xs)-1)
}

func TestReductions(t *testing.T) {
	xs := []float64{0.5, -1.25, 2, 3.5}
	p := 0.5 * -1.25 * 2 * 3.5
	mean := sumOf(xs...) / 4
	v := sampleVar(xs...)
	for _, c := range []tcase{
		{fn: "sum", args: []arg{Is(1, -2, 5)}, want: I(4)},
		{fn: "sum", args: []arg{V(xs...)}, want: R(sumOf(xs...))},
		{fn: "sum", args: []arg{RV(xs...)}, want: R(sumOf(xs...))},
		{fn: "sum", args: []arg{A(xs...)}, want: R(sumOf(xs...))},
		{fn: "sum", args: []arg{M(2, 2, xs...)}, want: R(sumOf(xs...))},
		{fn: "prod", args: []arg{Is(1, -2, 5)}, want: I(-10)},
		{fn: "prod", args: []arg{V(xs...)}, want: R(p)},
		{fn: "prod", args: []arg{RV(0, 2, 3)}, want: R(0)},
		{fn: "prod", args: []arg{M(2, 2, xs...)}, want: R(p)},
		{fn: "prod", args: []arg{A(xs...)}, want: R(p)},
		{fn: "mean", args: []arg{V(xs...)}, want: R(mean)},
		{fn: "mean", args: []arg{Is(1, 2, 6)}, want: R(3)},
		{fn: "mean", args: []arg{M(2, 2, xs...)}, want: R(mean)},
		{fn: "variance", args: []arg{RV(xs...)}, want: R(v)},
		{fn: "variance", args: []arg{A(2)}, want: R(0)},
		{fn: "variance", args: []arg{M(1, 4, xs...)}, want: R(v)},
		{fn: "sd", args: []arg{A(xs...)}, want: R(math.Sqrt(v))},
		{fn: "sd", args: []arg{M(4, 1, xs...)}, want: R(math.Sqrt(v))},
		{fn: "min", args: []arg{I(3), I(-2)}, want: I(-2)},
		{fn: "max", args: []arg{I(3), I(-2)}, want: I(3)},
		{fn: "min", args: []arg{R(0.3), R(-2.5)}, want: R(-2.5)},
		{fn: "max", args: []arg{R(0.3), I(-2)}, want: R(0.3)},
		{fn: "min", args: []arg{Is(4, -1, 7)}, want: I(-1)},
		{fn: "max", args: []arg{Is(4, -1, 7)}, want: I(7)},
		{fn: "min", args: []arg{V(xs...)}, want: R(-1.25)},
		{fn: "max", args: []arg{RV(xs...)}, want: R(3.5)},
		{fn: "max", args: []arg{A(xs...)}, want: R(3.5)},
		{fn: "min", args: []arg{V()}, want: R(math.Inf(1))},
		{fn: "max", args: []arg{A()}, want: R(math.Inf(-1))},
		{fn: "min", args: []arg{M(2, 2, xs...)}, want: R(-1.25)},
		{fn: "max", args: []arg{M(2, 2, xs...)}, want: R(3.5)},
		{fn: "size", args: []arg{V(xs...)}, want: I(4)},
		{fn: "size", args: []arg{R(2)}, want: I(1)},
		{fn: "size", args: []arg{I(2)}, want: I(1)},
		{fn: "size", args: []arg{M(2, 3, 1, 2, 3, 4, 5, 6)}, want: I(6)},
		{fn: "size", args: []arg{A2(2, 1, 1, 2)}, want: I(2)},
		{fn: "size", args: []arg{AE(V(1, 2, 3), V(4, 5, 6))}, want: I(2)},
		{fn: "num_elements", args: []arg{AE(V(1, 2, 3), V(4, 5, 6))}, want: I(6)},
		{fn: "num_elements", args: []arg{Is2(2, 3, 1, 2, 3, 4, 5, 6)}, want: I(6)},
		{fn: "num_elements", args: []arg{M(2, 3, 1, 2, 3, 4, 5, 6)}, want: I(6)},
		{fn: "num_elements", args: []arg{R(1)}, want: I(1)},
		{fn: "rows", args: []arg{V(1, 2, 3)}, want: I(3)},
		{fn: "rows", args: []arg{RV(1, 2, 3)}, want: I(1)},
		{fn: "rows", args: []arg{M(2, 3, 1, 2, 3, 4, 5, 6)}, want: I(2)},
		{fn: "cols", args: []arg{V(1, 2, 3)}, want: I(1)},
		{fn: "cols", args: []arg{RV(1, 2, 3)}, want: I(3)},
		{fn: "cols", args: []arg{M(2, 3, 1, 2, 3, 4, 5, 6)}, want: I(3)},
		{fn: "dims", args: []arg{R(1)}, want: Is()},
		{fn: "dims", args: []arg{I(1)}, want: Is()},
		{fn: "dims", args: []arg{V(1, 2, 3)}, want: Is(3, 1)},
		{fn: "dims", args: []arg{RV(1, 2, 3)}, want: Is(1, 3)},
		{fn: "dims", args: []arg{Is2(2, 3, 1, 2, 3, 4, 5, 6)}, want: Is(2, 3)},
		{fn: "dims", args: []arg{AE2(1, 2, M(2, 3, 1, 2, 3, 4, 5, 6), M(2, 3, 1, 2, 3, 4, 5, 6))}, want: Is(1, 2, 2, 3)},
	} {
		c.run(t, covered)
	}
}
