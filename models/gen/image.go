package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
)

// cifarSide is the side of a CIFAR-10 image; cifarRecord the size of one
// record of the binary format (a label byte, then 1024 R, G, B bytes).
const (
	cifarSide   = 32
	cifarRecord = 1 + 3*cifarSide*cifarSide
)

// rgbImage is one image as three channels, each row-major with values
// in [0, 1] (the uint8 value over 255).
type rgbImage struct {
	Label int
	Pix   [3][cifarSide * cifarSide]float64
}

// decodeCIFAR decodes records of CIFAR-10's binary format.
func decodeCIFAR(raw []byte) ([]rgbImage, error) {
	if len(raw) == 0 || len(raw)%cifarRecord != 0 {
		return nil, fmt.Errorf("size %d is not a multiple of the record size %d", len(raw), cifarRecord)
	}
	imgs := make([]rgbImage, len(raw)/cifarRecord)
	for i := range imgs {
		rec := raw[i*cifarRecord : (i+1)*cifarRecord]
		imgs[i].Label = int(rec[0])
		for c := range 3 {
			for k, b := range rec[1+c*cifarSide*cifarSide : 1+(c+1)*cifarSide*cifarSide] {
				imgs[i].Pix[c][k] = float64(b) / 255
			}
		}
	}
	return imgs, nil
}

// windowSettings are the settings of Experiment D.
type windowSettings struct {
	Side      int     // window side (16)
	OffsetSD  float64 // sd of the truncated-normal offsets (4)
	OffsetMax float64 // their bound (8)
	BlurSize  int     // blur kernel side (3)
	BlurSigma float64 // blur kernel sd (1.5)
}

var defaultWindow = windowSettings{Side: 16, OffsetSD: 4, OffsetMax: 8, BlurSize: 3, BlurSigma: 1.5}

// windowData is one image's problem: the image, the true offset and the
// blurred target window (per channel, row-major, Side×Side).
type windowData struct {
	Img    *rgbImage
	DX, DY float64 // true column and row offsets from the image centre
	Side   int
	Target [3][]float64
}

// truncNormal draws N(0, sd²) restricted to [-bound, bound] by rejection.
func truncNormal(rng *rand.Rand, sd, bound float64) float64 {
	for {
		if x := sd * rng.NormFloat64(); math.Abs(x) <= bound {
			return x
		}
	}
}

// windowProblem draws image idx's offset from the stream (seed, idx) and
// builds its target: the Side×Side window centred at (16.5 + dy,
// 16.5 + dx) (1-based pixel coordinates, the image centre being 16.5),
// sampled bilinearly, then blurred.
func windowProblem(img rgbImage, idx int, s windowSettings, seed uint64) windowData {
	rng := rand.New(rand.NewPCG(seed, streamWindow<<32|uint64(idx)))
	d := windowData{Img: &img, Side: s.Side}
	d.DX = truncNormal(rng, s.OffsetSD, s.OffsetMax)
	d.DY = truncNormal(rng, s.OffsetSD, s.OffsetMax)
	centre := float64(cifarSide+1) / 2
	for c := range 3 {
		win := bilinearWindow(img.Pix[c][:], cifarSide, cifarSide, centre+d.DY, centre+d.DX, s.Side, s.Side)
		d.Target[c] = blur(win, s.Side, s.Side, s.BlurSize, s.BlurSigma)
	}
	return d
}

// bilinearWindow returns the h×w window (row-major) whose pixel (i, j),
// 1-based, samples the H×W image bilinearly at (r − (h+1)/2 + i,
// c − (w+1)/2 + j) in 1-based pixel coordinates; outside the image
// counts as 0. This is the definition of shm's window_bilinear.
func bilinearWindow(img []float64, H, W int, r, c float64, h, w int) []float64 {
	at := func(i, j int) float64 { // 1-based
		if i < 1 || i > H || j < 1 || j > W {
			return 0
		}
		return img[(i-1)*W+(j-1)]
	}
	out := make([]float64, h*w)
	for i := 1; i <= h; i++ {
		for j := 1; j <= w; j++ {
			y := r - float64(h+1)/2 + float64(i)
			x := c - float64(w+1)/2 + float64(j)
			y0, x0 := math.Floor(y), math.Floor(x)
			fy, fx := y-y0, x-x0
			iy, ix := int(y0), int(x0)
			out[(i-1)*w+(j-1)] = (1-fy)*(1-fx)*at(iy, ix) + (1-fy)*fx*at(iy, ix+1) +
				fy*(1-fx)*at(iy+1, ix) + fy*fx*at(iy+1, ix+1)
		}
	}
	return out
}

// blur convolves the h×w image (row-major) with a size×size Gaussian
// kernel of sd sigma, normalized over the kernel pixels that fall inside
// the image (the definition of shm's gaussian_blur).
func blur(img []float64, h, w, size int, sigma float64) []float64 {
	half := size / 2
	out := make([]float64, h*w)
	for i := range h {
		for j := range w {
			var num, den float64
			for a := -half; a <= half; a++ {
				for b := -half; b <= half; b++ {
					if i+a < 0 || i+a >= h || j+b < 0 || j+b >= w {
						continue
					}
					k := math.Exp(-float64(a*a+b*b) / (2 * sigma * sigma))
					num += k * img[(i+a)*w+j+b]
					den += k
				}
			}
			out[i*w+j] = num / den
		}
	}
	return out
}

// writeJSON writes the problem as CmdStan JSON data: array[3]
// matrix[32, 32] img with the original 0..255 values (k/255·255 rounds
// back to k exactly) and array[3] matrix[Side, Side] obs (the target window) on the [0, 1]
// scale.
func (d windowData) writeJSON(w io.Writer) error {
	bw := bufio.NewWriter(w)
	writeMats := func(key string, mats [3][]float64, side int, scale float64) {
		fmt.Fprintf(bw, "  %q: [", key)
		for c := range 3 {
			if c > 0 {
				bw.WriteString(",")
			}
			bw.WriteString("\n    [")
			for i := range side {
				if i > 0 {
					bw.WriteString(",\n     ")
				}
				bw.WriteString("[")
				for j := range side {
					if j > 0 {
						bw.WriteString(", ")
					}
					v := mats[c][i*side+j]
					if scale != 1 {
						v = math.Round(scale * v)
					}
					bw.WriteString(fmtFloat(v))
				}
				bw.WriteString("]")
			}
			bw.WriteString("]")
		}
		bw.WriteString("\n  ]")
	}
	bw.WriteString("{\n")
	writeMats("img", [3][]float64{d.Img.Pix[0][:], d.Img.Pix[1][:], d.Img.Pix[2][:]}, cifarSide, 255)
	bw.WriteString(",\n")
	writeMats("obs", d.Target, d.Side, 1)
	bw.WriteString("\n}\n")
	return bw.Flush()
}
