// Package image implements the image built-ins of the paper's
// image-window experiment on the autodiff tape: grid_points,
// window_bilinear and gaussian_blur. Images are matrix[H, W], one per
// channel; pixel (r, c) is centred at coordinates (r, c), 1-based, rows
// first.
//
// The two image operations are linear in the image and are written with
// the tape's vector operations (gathers of shifted pixels, constant masks
// and weights, elementwise products), so each costs a handful of nodes of
// O(H·W) work and differentiates exactly in the image and, for
// window_bilinear, in the window position.
package image

import (
	"fmt"
	"math"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// Register adds the image built-ins to m.
func Register(m stdlib.Impls) {
	m.Add("grid_points", gridPoints)
	m.Add("window_bilinear", windowBilinear)
	m.Add("gaussian_blur", gaussianBlur)
}

// gridPoints returns the matrix[h·w, 2] of the (row, col) coordinates of
// an h×w grid in row-major order: point k = (r − 1)·w + c.
func gridPoints(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
	h, w := args[0].Int, args[1].Int
	if h < 1 || w < 1 {
		return stdlib.Value{}, fmt.Errorf("grid_points: sizes must be positive, got %d×%d", h, w)
	}
	pts := make([]float64, 0, 2*h*w)
	for r := 1; r <= h; r++ {
		for col := 1; col <= w; col++ {
			pts = append(pts, float64(r), float64(col))
		}
	}
	return stdlib.ADValue(c.Tape.NewConst(autodiff.MatrixShape(h*w, 2), pts)), nil
}

func scalar(t *autodiff.Tape, v stdlib.Value) autodiff.Value {
	if v.Type == lang.IntType {
		return t.Const(float64(v.Int))
	}
	return v.AD
}

// shifted gathers, for every pixel (i, j) of an h×w output, the image
// pixel (r0 + i, c0 + j) (0-based), with zeros outside the image: it
// returns the gathered values times the 0/1 mask of inside pixels.
func shifted(t *autodiff.Tape, img autodiff.Value, r0, c0, h, w int, weight func(i, j int) float64) autodiff.Value {
	H, W := img.Rows(), img.Cols()
	idx := make([]int, h*w)
	mask := make([]float64, h*w)
	for i := 0; i < h; i++ {
		for j := 0; j < w; j++ {
			r, c := r0+i, c0+j
			k := i*w + j
			if r >= 0 && r < H && c >= 0 && c < W {
				idx[k] = r*W + c
				mask[k] = weight(i, j)
			}
		}
	}
	g := t.Reshape(t.Gather(img, idx), autodiff.MatrixShape(h, w))
	return t.Mul(g, t.NewConst(autodiff.MatrixShape(h, w), mask))
}

// windowBilinear returns the h×w window whose pixel (i, j) samples img
// bilinearly at (r − (h+1)/2 + i, c − (w+1)/2 + j), 1-based, with zero
// outside the image.
func windowBilinear(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
	t := c.Tape
	img := args[0].AD
	r, col := scalar(t, args[1]), scalar(t, args[2])
	h, w := args[3].Int, args[4].Int
	if h < 1 || w < 1 {
		return stdlib.Value{}, fmt.Errorf("window_bilinear: window sizes must be positive, got %d×%d", h, w)
	}
	rv, cv := t.Scalar(r), t.Scalar(col)
	if math.IsNaN(rv) || math.IsInf(rv, 0) || math.IsNaN(cv) || math.IsInf(cv, 0) {
		return stdlib.Value{}, fmt.Errorf("window_bilinear: position (%g, %g) is not finite", rv, cv)
	}
	// Pixel (i, j) (1-based) samples row pr = r − (h+1)/2 + i. With
	// base = r − (h+1)/2 and f = base − floor(base), the 1-based rows
	// floor(base) + i and floor(base) + i + 1 get weights 1 − f and f;
	// every pixel of the window shares f.
	baseR, baseC := rv-float64(h+1)/2, cv-float64(w+1)/2
	flR, flC := math.Floor(baseR), math.Floor(baseC)
	fr := t.Sub(r, t.Const(flR+float64(h+1)/2)) // = base − floor(base), differentiable in r
	fc := t.Sub(col, t.Const(flC+float64(w+1)/2))
	one := t.Const(1)
	gr, gc := t.Sub(one, fr), t.Sub(one, fc)
	// 0-based image row of pixel i = 0 at weight 1 − f: floor(base) + 1 − 1.
	r0, c0 := int(flR), int(flC)
	unit := func(int, int) float64 { return 1 }
	p00 := shifted(t, img, r0, c0, h, w, unit)
	p01 := shifted(t, img, r0, c0+1, h, w, unit)
	p10 := shifted(t, img, r0+1, c0, h, w, unit)
	p11 := shifted(t, img, r0+1, c0+1, h, w, unit)
	top := t.Add(t.Mul(gc, p00), t.Mul(fc, p01))
	bottom := t.Add(t.Mul(gc, p10), t.Mul(fc, p11))
	out := t.Add(t.Mul(gr, top), t.Mul(fr, bottom))
	if err := t.Err(); err != nil {
		return stdlib.Value{}, fmt.Errorf("window_bilinear: %v", err)
	}
	return stdlib.ADValue(out), nil
}

// gaussianBlur convolves img with a normalized size×size Gaussian kernel
// of standard deviation sigma; at the edges the kernel is renormalized
// over the pixels inside the image.
func gaussianBlur(c *stdlib.Context, args, _ []stdlib.Value) (stdlib.Value, error) {
	t := c.Tape
	img := args[0].AD
	size := args[1].Int
	sigma := t.Scalar(scalar(t, args[2]))
	if size < 1 || size%2 == 0 {
		return stdlib.Value{}, fmt.Errorf("gaussian_blur: size must be a positive odd number, got %d", size)
	}
	if !(sigma > 0) || math.IsInf(sigma, 1) {
		return stdlib.Value{}, fmt.Errorf("gaussian_blur: sigma must be positive and finite, got %g", sigma)
	}
	H, W := img.Rows(), img.Cols()
	half := size / 2
	kernel := func(di, dj int) float64 {
		return math.Exp(-float64(di*di+dj*dj) / (2 * sigma * sigma))
	}
	// norm[p] is the kernel mass inside the image around pixel p.
	norm := make([]float64, H*W)
	for r := 0; r < H; r++ {
		for col := 0; col < W; col++ {
			s := 0.0
			for di := -half; di <= half; di++ {
				for dj := -half; dj <= half; dj++ {
					if rr, cc := r+di, col+dj; rr >= 0 && rr < H && cc >= 0 && cc < W {
						s += kernel(di, dj)
					}
				}
			}
			norm[r*W+col] = s
		}
	}
	var out autodiff.Value
	for di := -half; di <= half; di++ {
		for dj := -half; dj <= half; dj++ {
			k := kernel(di, dj)
			term := shifted(t, img, di, dj, H, W, func(i, j int) float64 { return k / norm[i*W+j] })
			if !out.IsValid() {
				out = term
			} else {
				out = t.Add(out, term)
			}
		}
	}
	if err := t.Err(); err != nil {
		return stdlib.Value{}, fmt.Errorf("gaussian_blur: %v", err)
	}
	return stdlib.ADValue(out), nil
}
