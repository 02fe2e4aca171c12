package ot

// Grid is a regular h×w grid of points with unit spacing, in row-major order:
// point k = r·W + c has coordinates (r, c) (shifts do not change the cost).
type Grid struct {
	H, W int
}

type gridBufs struct{}
