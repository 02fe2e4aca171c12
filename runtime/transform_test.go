package runtime

import (
	"math"
	"testing"

	"github.com/shmlang/shm/autodiff"
)

// TestTransforms checks every constraint transform: the inverse recovers
// the unconstrained values, and the log-Jacobian equals the sum of
// log|dx_i/du_i| computed by central finite differences of the transform.
func TestTransforms(t *testing.T) {
	u := []float64{-1.3, 0.2, 2.1}
	tests := []struct {
		name                 string
		lo, hi, off, mult    []float64
		wantLoHi, wantOffMul bool
	}{
		{name: "lower", lo: []float64{0.5}},
		{name: "upper", hi: []float64{-2}},
		{name: "lower+upper", lo: []float64{-1}, hi: []float64{3}},
		{name: "vector bounds", lo: []float64{-1, 0, 1}, hi: []float64{1, 2, 5}},
		{name: "offset+multiplier", off: []float64{2}, mult: []float64{0.5}},
		{name: "multiplier only", mult: []float64{3, 2, 1}},
		{name: "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forward := func(uu []float64) (x []float64, logJ float64) {
				tape := autodiff.NewTape()
				var b bounds
				mk := func(v []float64) (autodiff.Value, bool) {
					if v == nil {
						return autodiff.Value{}, false
					}
					if len(v) == 1 {
						return tape.Const(v[0]), true
					}
					return tape.ConstVec(v), true
				}
				b.lo, b.hasLo = mk(tt.lo)
				b.hi, b.hasHi = mk(tt.hi)
				b.offset, b.hasOff = mk(tt.off)
				b.mult, b.hasMul = mk(tt.mult)
				xv, lj := constrain(tape, tape.ConstVec(uu), b)
				return append([]float64(nil), tape.Val(xv)...), tape.Scalar(lj)
			}
			x, logJ := forward(u)
			back, err := unconstrain(x, tt.lo, tt.hi, tt.off, tt.mult)
			if err != nil {
				t.Fatal(err)
			}
			for i := range u {
				if math.Abs(back[i]-u[i]) > 1e-12 {
					t.Errorf("round trip: u[%d] = %g came back as %g", i, u[i], back[i])
				}
			}
			numJ := 0.0
			const h = 1e-6
			for i := range u {
				up := append([]float64(nil), u...)
				dn := append([]float64(nil), u...)
				up[i] += h
				dn[i] -= h
				xu, _ := forward(up)
				xd, _ := forward(dn)
				numJ += math.Log(math.Abs((xu[i] - xd[i]) / (2 * h)))
			}
			if math.Abs(numJ-logJ) > 1e-7 {
				t.Errorf("log-Jacobian %g, finite differences %g", logJ, numJ)
			}
		})
	}
}

func TestUnconstrainRejectsOutOfBounds(t *testing.T) {
	if _, err := unconstrain([]float64{-1}, []float64{0}, nil, nil, nil); err == nil {
		t.Error("value below its lower bound accepted")
	}
	if _, err := unconstrain([]float64{3}, []float64{0}, []float64{3}, nil, nil); err == nil {
		t.Error("value on its upper bound accepted")
	}
}
