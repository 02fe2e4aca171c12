package image

import (
	"math"
	"testing"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/stdlib"
)

func ctx() *stdlib.Context {
	return &stdlib.Context{Tape: autodiff.NewTape(), State: map[string]any{}}
}

// img5x4 is a 5×4 test image with distinct values.
var img5x4 = []float64{
	1, 2, 3, 4,
	5, 6, 7, 8,
	9, 10, 11, 12,
	13, 14, 15, 16,
	17, 18, 19, 20.5,
}

// bilinearRef samples a row-major H×W image at 1-based (pr, pc), zero
// outside: the direct definition.
func bilinearRef(img []float64, H, W int, pr, pc float64) float64 {
	at := func(r, c int) float64 {
		if r < 1 || r > H || c < 1 || c > W {
			return 0
		}
		return img[(r-1)*W+c-1]
	}
	r0, c0 := math.Floor(pr), math.Floor(pc)
	fr, fc := pr-r0, pc-c0
	ri, ci := int(r0), int(c0)
	return (1-fr)*(1-fc)*at(ri, ci) + (1-fr)*fc*at(ri, ci+1) + fr*(1-fc)*at(ri+1, ci) + fr*fc*at(ri+1, ci+1)
}

func TestWindowBilinearValues(t *testing.T) {
	for _, pos := range [][2]float64{{3, 2.5}, {2.3, 1.7}, {0.2, 4.9}, {5.5, -0.25}, {3, 2}} {
		c := ctx()
		img := c.Tape.NewConst(autodiff.MatrixShape(5, 4), img5x4)
		h, w := 3, 2
		v, err := windowBilinear(c, []stdlib.Value{stdlib.ADValue(img), stdlib.RealValue(c.Tape.Const(pos[0])),
			stdlib.RealValue(c.Tape.Const(pos[1])), stdlib.IntValue(h), stdlib.IntValue(w)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := c.Tape.Val(v.AD)
		for i := 1; i <= h; i++ {
			for j := 1; j <= w; j++ {
				want := bilinearRef(img5x4, 5, 4, pos[0]-float64(h+1)/2+float64(i), pos[1]-float64(w+1)/2+float64(j))
				if g := got[(i-1)*w+j-1]; math.Abs(g-want) > 1e-12 {
					t.Errorf("position %v pixel (%d,%d): %g, want %g", pos, i, j, g, want)
				}
			}
		}
	}
}

func TestWindowBilinearGradient(t *testing.T) {
	// Variables: r, c, then the 20 pixels.
	x0 := append([]float64{2.3, 1.7}, img5x4...)
	f := func(tape *autodiff.Tape, x autodiff.Value) autodiff.Value {
		c := &stdlib.Context{Tape: tape, State: map[string]any{}}
		img := tape.Reshape(tape.Slice(x, 2, 20), autodiff.MatrixShape(5, 4))
		v, err := windowBilinear(c, []stdlib.Value{stdlib.ADValue(img), stdlib.RealValue(tape.Index(x, 0)),
			stdlib.RealValue(tape.Index(x, 1)), stdlib.IntValue(3), stdlib.IntValue(3)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		weights := make([]float64, 9)
		for i := range weights {
			weights[i] = float64(i + 1)
		}
		return tape.Dot(tape.Reshape(v.AD, autodiff.VectorShape(9)), tape.ConstVec(weights))
	}
	if err := autodiff.CheckGradient(f, x0, 1e-6); err != nil {
		t.Error(err)
	}
}

func TestGaussianBlur(t *testing.T) {
	c := ctx()
	img := c.Tape.NewConst(autodiff.MatrixShape(5, 4), img5x4)
	sigma := 1.5
	v, err := gaussianBlur(c, []stdlib.Value{stdlib.ADValue(img), stdlib.IntValue(3), stdlib.RealValue(c.Tape.Const(sigma))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Tape.Val(v.AD)
	for r := 0; r < 5; r++ {
		for col := 0; col < 4; col++ {
			num, den := 0.0, 0.0
			for di := -1; di <= 1; di++ {
				for dj := -1; dj <= 1; dj++ {
					rr, cc := r+di, col+dj
					if rr < 0 || rr >= 5 || cc < 0 || cc >= 4 {
						continue
					}
					k := math.Exp(-float64(di*di+dj*dj) / (2 * sigma * sigma))
					num += k * img5x4[rr*4+cc]
					den += k
				}
			}
			if want := num / den; math.Abs(got[r*4+col]-want) > 1e-12 {
				t.Errorf("pixel (%d,%d): %g, want %g", r+1, col+1, got[r*4+col], want)
			}
		}
	}
	// A constant image stays constant (the kernel is renormalized at edges).
	flat := make([]float64, 20)
	for i := range flat {
		flat[i] = 7
	}
	v, _ = gaussianBlur(c, []stdlib.Value{stdlib.ADValue(c.Tape.NewConst(autodiff.MatrixShape(5, 4), flat)), stdlib.IntValue(5), stdlib.RealValue(c.Tape.Const(2))}, nil)
	for i, g := range c.Tape.Val(v.AD) {
		if math.Abs(g-7) > 1e-12 {
			t.Fatalf("constant image blurred to %g at %d", g, i)
		}
	}
	f := func(tape *autodiff.Tape, x autodiff.Value) autodiff.Value {
		c := &stdlib.Context{Tape: tape, State: map[string]any{}}
		out, err := gaussianBlur(c, []stdlib.Value{stdlib.ADValue(tape.Reshape(x, autodiff.MatrixShape(5, 4))), stdlib.IntValue(3), stdlib.RealValue(tape.Const(1.5))}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return tape.DotSelf(out.AD)
	}
	if err := autodiff.CheckGradient(f, img5x4, 1e-6); err != nil {
		t.Error(err)
	}
	if _, err := gaussianBlur(c, []stdlib.Value{stdlib.ADValue(img), stdlib.IntValue(4), stdlib.RealValue(c.Tape.Const(1))}, nil); err == nil {
		t.Error("even kernel size accepted")
	}
}

func TestGridPoints(t *testing.T) {
	c := ctx()
	v, err := gridPoints(c, []stdlib.Value{stdlib.IntValue(2), stdlib.IntValue(3)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1, 1, 1, 2, 1, 3, 2, 1, 2, 2, 2, 3}
	got := c.Tape.Val(v.AD)
	if v.AD.Rows() != 6 || v.AD.Cols() != 2 {
		t.Fatalf("shape %d×%d", v.AD.Rows(), v.AD.Cols())
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}
