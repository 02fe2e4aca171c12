package calibrate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"

	"github.com/shmlang/shm/runtime/data"
)

// Draws are the kept draws of one run, what reweighting them to another
// loss scale needs: the unconstrained points, their parameter columns
// (constrained), and the log density without Jacobian at the run's scale.
// When the log density is affine in the loss scale — lp(θ; λ) = A(θ) +
// λ·B(θ), as in every model whose loss enters as target += −λ·N·S(θ) —
// Prior and Loss hold A and B for each draw and for the truth, and a new
// scale's log densities cost nothing; otherwise they are nil and the
// reweighting evaluates the model at the new scale.
type Draws struct {
	Theta, Params [][]float64
	LP            []float64
	// Prior and Loss: A and B of each draw; TruthPrior and TruthLoss: the
	// truth's. Prior is nil when the log density is not affine in λ.
	Prior, Loss           []float64
	TruthPrior, TruthLoss float64
}

// Affine reports whether the draws' log densities are affine in the loss
// scale (Prior and Loss are set).
func (d *Draws) Affine() bool { return d.Prior != nil }

// LogDensityAt returns the draws' log densities and the truth's at the
// loss scale lambda, from Prior and Loss.
func (d *Draws) LogDensityAt(lambda float64) (draws []float64, truth float64) {
	draws = make([]float64, len(d.Prior))
	for s := range draws {
		draws[s] = d.Prior[s] + lambda*d.Loss[s]
	}
	return draws, d.TruthPrior + lambda*d.TruthLoss
}

// drawsMagic opens a draws file; the version follows it.
const drawsMagic = "SHMDRAWS"

// drawsVersion is the format written: magic, version, S, dim, columns,
// affine flag (uint32 each, little-endian), then float64s: S×dim Theta,
// S×columns Params, S LP, and when affine S Prior, S Loss, TruthPrior,
// TruthLoss.
const drawsVersion = 1

// maxDrawsFile bounds the size of a draws file read back (a file of
// another origin is not allowed to claim any size).
const maxDrawsFile = 1 << 31

// WriteDraws stores a run's draws (through a temporary file renamed when
// complete).
func (d Dir) WriteDraws(t Task, dr *Draws) error {
	s := len(dr.Theta)
	if s == 0 || len(dr.Params) != s || len(dr.LP) != s {
		return fmt.Errorf("draws: %d points, %d parameter rows, %d log densities", s, len(dr.Params), len(dr.LP))
	}
	if dr.Prior != nil && (len(dr.Prior) != s || len(dr.Loss) != s) {
		return errors.New("draws: prior and loss terms of another length")
	}
	dim, cols := len(dr.Theta[0]), len(dr.Params[0])
	var b bytes.Buffer
	b.WriteString(drawsMagic)
	affine := uint32(0)
	if dr.Affine() {
		affine = 1
	}
	for _, x := range []uint32{drawsVersion, uint32(s), uint32(dim), uint32(cols), affine} {
		binary.Write(&b, binary.LittleEndian, x)
	}
	put := func(xs []float64) {
		for _, x := range xs {
			binary.Write(&b, binary.LittleEndian, math.Float64bits(x))
		}
	}
	for i := range s {
		if len(dr.Theta[i]) != dim || len(dr.Params[i]) != cols {
			return fmt.Errorf("draws: draw %d has %d values and %d columns, the first %d and %d", i+1, len(dr.Theta[i]), len(dr.Params[i]), dim, cols)
		}
		put(dr.Theta[i])
	}
	for i := range s {
		put(dr.Params[i])
	}
	put(dr.LP)
	if dr.Affine() {
		put(dr.Prior)
		put(dr.Loss)
		put([]float64{dr.TruthPrior, dr.TruthLoss})
	}
	return writeAtomic(d.DrawsPath(t), b.Bytes())
}

// ReadDraws reads a run's draws; nil when the run kept none (a result of
// an earlier version, or reweighted).
func (d Dir) ReadDraws(t Task) (*Draws, error) {
	path := d.DrawsPath(t)
	b, err := data.ReadAll(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	dr, err := decodeDraws(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return dr, nil
}

func decodeDraws(b []byte) (*Draws, error) {
	const head = len(drawsMagic) + 5*4
	if len(b) < head || string(b[:len(drawsMagic)]) != drawsMagic {
		return nil, errors.New("not a draws file")
	}
	if len(b) > maxDrawsFile {
		return nil, fmt.Errorf("draws file of %d bytes", len(b))
	}
	pos := head
	u := func(i int) uint64 { return uint64(binary.LittleEndian.Uint32(b[len(drawsMagic)+4*i:])) }
	if v := u(0); v != drawsVersion {
		return nil, fmt.Errorf("draws file version %d, this shm reads %d", v, drawsVersion)
	}
	s, dim, cols, affine := u(1), u(2), u(3), u(4)
	// The counts are checked against the file's size in uint64, where
	// their products cannot wrap (each is below 2^32, the size below 2^31).
	values := uint64(len(b)-head) / 8
	perDraw := dim + cols + 1
	if affine == 1 {
		perDraw += 2
	}
	if s < 1 || affine > 1 || (len(b)-head)%8 != 0 || s > values || perDraw > values/s+1 ||
		s*perDraw+2*affine != values {
		return nil, fmt.Errorf("draws file of %d bytes does not hold %d draws of %d values and %d columns", len(b), s, dim, cols)
	}
	next := func(n uint64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[pos:]))
			pos += 8
		}
		return out
	}
	dr := &Draws{Theta: make([][]float64, s), Params: make([][]float64, s)}
	for i := range s {
		dr.Theta[i] = next(dim)
	}
	for i := range s {
		dr.Params[i] = next(cols)
	}
	dr.LP = next(s)
	if affine == 1 {
		dr.Prior, dr.Loss = next(s), next(s)
		t := next(2)
		dr.TruthPrior, dr.TruthLoss = t[0], t[1]
	}
	return dr, nil
}
