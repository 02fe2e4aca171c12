package calibrate

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
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
	// The run the draws are of: its task (set from the file's header by
	// ReadDraws; WriteDraws writes its task argument), its seed and the
	// SHA-256 of the dataset it ran on (hexadecimal).
	Task          Task
	Seed          uint64
	DatasetSHA256 string
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
// affine flag, dataset (uint32 each, little-endian), the loss scale and
// the seed (float64 and uint64), the dataset's SHA-256 (32 bytes), then
// float64s: S×dim Theta, S×columns Params, S LP, and when affine S Prior,
// S Loss, TruthPrior, TruthLoss. Version 1 had no dataset, loss scale,
// seed and digest: its files cannot be told from another run's.
const drawsVersion = 2

// drawsHead is the size of a draws file's header.
const drawsHead = len(drawsMagic) + 6*4 + 2*8 + sha256.Size

// maxDrawsFile bounds the size of a draws file read back (a file of
// another origin is not allowed to claim any size).
const maxDrawsFile = 1 << 31

// WriteDraws stores the draws of task t's run (through a temporary file
// renamed when complete).
func (d Dir) WriteDraws(t Task, dr *Draws) error {
	b, err := encodeDraws(t, dr)
	if err != nil {
		return err
	}
	return writeAtomic(d.DrawsPath(t), b)
}

// encodeDraws returns the draws file of task t's run.
func encodeDraws(t Task, dr *Draws) ([]byte, error) {
	s := len(dr.Theta)
	if s == 0 || len(dr.Params) != s || len(dr.LP) != s {
		return nil, fmt.Errorf("draws: %d points, %d parameter rows, %d log densities", s, len(dr.Params), len(dr.LP))
	}
	if dr.Prior != nil && (len(dr.Prior) != s || len(dr.Loss) != s) {
		return nil, errors.New("draws: prior and loss terms of another length")
	}
	digest, err := hex.DecodeString(dr.DatasetSHA256)
	if err != nil || len(digest) != sha256.Size {
		return nil, fmt.Errorf("draws: dataset digest %q is not a SHA-256", dr.DatasetSHA256)
	}
	if t.Dataset < 0 || uint64(t.Dataset) > math.MaxUint32 || !(t.Lambda > 0) || math.IsInf(t.Lambda, 1) {
		return nil, fmt.Errorf("draws: the task of lambda %g, dataset %d", t.Lambda, t.Dataset+1)
	}
	dim, cols := len(dr.Theta[0]), len(dr.Params[0])
	var b bytes.Buffer
	b.WriteString(drawsMagic)
	affine := uint32(0)
	if dr.Affine() {
		affine = 1
	}
	for _, x := range []uint32{drawsVersion, uint32(s), uint32(dim), uint32(cols), affine, uint32(t.Dataset)} {
		binary.Write(&b, binary.LittleEndian, x)
	}
	binary.Write(&b, binary.LittleEndian, math.Float64bits(t.Lambda))
	binary.Write(&b, binary.LittleEndian, dr.Seed)
	b.Write(digest)
	put := func(xs []float64) {
		for _, x := range xs {
			binary.Write(&b, binary.LittleEndian, math.Float64bits(x))
		}
	}
	for i := range s {
		if len(dr.Theta[i]) != dim || len(dr.Params[i]) != cols {
			return nil, fmt.Errorf("draws: draw %d has %d values and %d columns, the first %d and %d", i+1, len(dr.Theta[i]), len(dr.Params[i]), dim, cols)
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
	return b.Bytes(), nil
}

// ReadDraws reads a run's draws, with the task, seed and dataset digest
// its file records (not checked: runDraws checks them against the run's
// result); nil when there is no file.
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
	const head = drawsHead
	if len(b) < len(drawsMagic)+4 || string(b[:len(drawsMagic)]) != drawsMagic {
		return nil, errors.New("not a draws file")
	}
	if len(b) > maxDrawsFile {
		return nil, fmt.Errorf("draws file of %d bytes", len(b))
	}
	u := func(i int) uint64 { return uint64(binary.LittleEndian.Uint32(b[len(drawsMagic)+4*i:])) }
	if v := u(0); v != drawsVersion {
		why := ""
		if v < drawsVersion {
			why = ": written by an earlier version of shm, without the task and dataset of its run; start a new --dir for this calibration"
		}
		return nil, fmt.Errorf("draws file version %d, this shm reads %d%s", v, drawsVersion, why)
	}
	if len(b) < head {
		return nil, errors.New("not a draws file: its header is truncated")
	}
	pos := len(drawsMagic) + 6*4
	s, dim, cols, affine, dataset := u(1), u(2), u(3), u(4), u(5)
	lambda := math.Float64frombits(binary.LittleEndian.Uint64(b[pos:]))
	seed := binary.LittleEndian.Uint64(b[pos+8:])
	digest := hex.EncodeToString(b[pos+16 : head])
	if !(lambda > 0) || math.IsInf(lambda, 1) {
		return nil, fmt.Errorf("draws file of a run at lambda %g", lambda)
	}
	pos = head
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
	dr := &Draws{Theta: make([][]float64, s), Params: make([][]float64, s),
		Task: Task{Lambda: lambda, Dataset: int(dataset)}, Seed: seed, DatasetSHA256: digest}
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

// runDraws returns the draws of a run whose result is run (read and
// checked by ReadResult), nil when it kept none. A draws file that is not
// that run's — of another task, seed or dataset, other contents than
// the result records, or a file the result does not record — is an
// error naming it and what differs.
func (d Dir) runDraws(run *Result) (*Draws, error) {
	path := d.DrawsPath(run.Task)
	b, err := data.ReadAll(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && run.DrawsSHA256 == "":
		return nil, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s is missing: the result %s records draws (sha256 %s…); remove the result too to run the task again",
			path, d.ResultPath(run.Task), short(run.DrawsSHA256))
	case err != nil:
		return nil, err
	}
	dr, err := decodeDraws(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var why string
	switch got := sha256Hex(b); {
	case dr.Task != run.Task:
		why = fmt.Sprintf("holds the draws of lambda %s, dataset %d, not of lambda %s, dataset %d",
			lambdaText(dr.Task.Lambda), dr.Task.Dataset+1, lambdaText(run.Lambda), run.Dataset+1)
	case dr.Seed != run.Seed:
		why = fmt.Sprintf("holds the draws of a run of seed %d, its result's has %d", dr.Seed, run.Seed)
	case dr.DatasetSHA256 != run.DatasetSHA256:
		why = fmt.Sprintf("holds the draws of a run on another dataset (sha256 %s…) than its result's (sha256 %s…)",
			short(dr.DatasetSHA256), short(run.DatasetSHA256))
	case run.DrawsSHA256 == "":
		why = "its result records no draws"
	case got != run.DrawsSHA256:
		why = fmt.Sprintf("its contents (sha256 %s…) are not those its result records (sha256 %s…)", short(got), short(run.DrawsSHA256))
	case len(dr.Theta) != run.Draws || len(dr.Params[0]) != len(run.Columns):
		why = fmt.Sprintf("holds %d draws of %d columns, its result %d of %d", len(dr.Theta), len(dr.Params[0]), run.Draws, len(run.Columns))
	}
	if why != "" {
		return nil, fmt.Errorf("%s %s: they are not the draws of the run whose result is %s (remove both to run the task again)", path, why, d.ResultPath(run.Task))
	}
	return dr, nil
}

// short is the start of a digest, as messages show it.
func short(digest string) string { return digest[:min(len(digest), 12)] }
