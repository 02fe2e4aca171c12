package runtime

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/stdlib"
)

// Density evaluates a bound model's log density and gradient on its own
// tape. It implements the sampler's Target. A Density is not safe for
// concurrent use: make one per chain with NewDensity.
type Density struct {
	m    *Model
	tape *autodiff.Tape
	ev   *evaluator
	base []slot // data and transformed data on this tape
	// nonFinite names the first non-finite term of the last evaluation.
	nonFinite error
	// Jacobian adds the log-Jacobian of the constraining transforms (true
	// for sampling; false gives the density of the constrained values).
	Jacobian bool
	// Constants keeps the terms that do not depend on the parameters,
	// which ~ statements and _lupdf/_lupmf calls drop by default (Stan's
	// propto = false: the lp__ of CmdStan's optimize and laplace).
	Constants bool
	// Workers is the number of replicates of a crn(K, ...) call with a
	// scalar body evaluated at once, on their own goroutines; 0 or 1
	// evaluates them one after the other. The value and the gradient are
	// bitwise the same for every setting.
	Workers int
}

// NewDensity returns a Density over the model's unconstrained parameters.
func (m *Model) NewDensity() (_ *Density, err error) {
	tape := autodiff.NewTape()
	ev := newEvaluator(m.IR.File, m.IR, m.opts.Impls, tape, m.opts.Print)
	ev.configure(m.opts)
	defer ev.recoverTape(&err)
	ev.crn.runSeed = m.opts.Seed
	base := make([]slot, len(m.frame))
	for i, s := range m.frame {
		if s.set {
			base[i] = slot{v: copyValue(tape, m.tape, s.v), dims: s.dims, set: true}
		}
	}
	if err := tape.Keep(); err != nil {
		return nil, fmt.Errorf("runtime: keeping the data on the tape: %w", err)
	}
	return &Density{m: m, tape: tape, ev: ev, base: base, Jacobian: true}, nil
}

// Dim returns the number of unconstrained parameters.
func (d *Density) Dim() int { return d.m.Layout.Dim }

// start resets the tape and the frame for a new evaluation.
func (d *Density) start() {
	d.tape.Reset()
	d.ev.cellMem.reset()
	d.ev.evaluation++
	copy(d.ev.frame, d.base)
	d.ev.crn.workers = d.Workers
	d.ev.constants = d.Constants
	d.ev.target, d.ev.targetPos = d.ev.target[:0], d.ev.targetPos[:0]
}

// setParams constrains the unconstrained values u (a tape vector) into
// the parameters' slots, adding the log-Jacobian to the target when
// jacobian is set.
func (d *Density) setParams(u autodiff.Value, jacobian bool) error {
	t := d.tape
	ev := d.ev
	for _, e := range d.m.Layout.Entries {
		decl := e.Decl
		ev.frame[decl.Var.Slot] = slot{dims: e.Dims, set: true}
		b, err := ev.evalBounds(decl)
		if err != nil {
			return err
		}
		typ := decl.Var.Type
		if decl.Special != lang.NoSpecial {
			v, lj := constrainSpecial(t, t.Slice(u, e.Offset, e.Size), decl, e.Dims)
			if jacobian {
				for _, x := range lj {
					ev.pushTarget(x, decl.Pos)
				}
			}
			ev.frame[decl.Var.Slot].v = v
			continue
		}
		var raw autodiff.Value
		if e.Size == 1 && len(e.Dims) == 0 {
			raw = t.Index(u, e.Offset)
		} else {
			raw = t.Slice(u, e.Offset, e.Size)
		}
		if typ.Dims > 0 && typ.Base.IsLinalg() {
			// An array of vectors or matrices: constrain each element.
			inner := e.Dims[typ.Dims:]
			shape := adShape(lang.Type{Base: typ.Base}, inner)
			n := shape.Len()
			count := e.Size / max(n, 1)
			elems := make([]stdlib.Value, count)
			for i := range elems {
				ui := t.Reshape(t.Slice(raw, i*n, n), shape)
				x, lj := constrain(t, ui, b) // bounds are scalars or one element's shape
				if jacobian {
					ev.pushTarget(lj, decl.Pos)
				}
				elems[i] = stdlib.Value{Type: lang.Type{Base: typ.Base}, AD: x}
			}
			ev.frame[decl.Var.Slot].v = stdlib.Value{Type: typ, Elems: elems, Dims: e.Dims[:typ.Dims]}
			continue
		}
		shaped := raw
		if typ.Dims == 0 && typ.Base != lang.Real {
			shaped = t.Reshape(raw, adShape(typ, e.Dims))
		}
		x, lj := constrain(t, shaped, b)
		if jacobian {
			ev.pushTarget(lj, decl.Pos)
		}
		v := stdlib.Value{Type: typ, AD: x}
		if typ.Dims > 0 {
			v.Dims = e.Dims
		}
		ev.frame[decl.Var.Slot].v = v
	}
	return nil
}

// transformedParams runs the transformed parameters block and checks its
// constraints.
func (d *Density) transformedParams() error {
	ev := d.ev
	if _, err := ev.execAll(d.m.IR.TransformedParams); err != nil {
		return err
	}
	for _, o := range d.m.tpOut {
		if !o.decl.Constrained() {
			continue // nothing to check (the value is read when written out)
		}
		v, err := ev.read(o.decl.Var, o.decl.Pos)
		if err != nil {
			return err
		}
		if err := ev.checkBounds(o.decl, v); err != nil {
			return &RejectError{File: ev.file, Pos: o.decl.Pos, Msg: "transformed parameter " + err.Error()}
		}
	}
	return nil
}

// LogDensityGrad returns the log density at the unconstrained point theta
// (including the log-Jacobian when d.Jacobian is set) and writes its
// gradient into grad.
func (d *Density) LogDensityGrad(theta, grad []float64) (float64, error) {
	lp, err := d.eval(theta, true)
	if err != nil {
		return math.Inf(-1), err
	}
	if err := d.tape.Gradient(lp); err != nil {
		if errors.Is(err, autodiff.ErrInterrupted) && d.ev.ctx0 != nil {
			err = &Error{File: d.ev.file, Msg: "interrupted", cause: d.ev.ctx0.Err()}
		}
		return math.Inf(-1), err
	}
	if d.tape.NumVars() != len(grad) {
		return math.Inf(-1), fmt.Errorf("runtime: gradient has %d entries, want %d", d.tape.NumVars(), len(grad))
	}
	if err := d.tape.VarGrad(grad); err != nil {
		return math.Inf(-1), err
	}
	return d.tape.Scalar(lp), nil
}

// LogDensity returns the log density at theta without its gradient. The
// parameters are still recorded as variables, so that ~ statements drop
// exactly the same constant terms as in LogDensityGrad.
func (d *Density) LogDensity(theta []float64) (float64, error) {
	lp, err := d.eval(theta, false)
	if err != nil {
		return math.Inf(-1), err
	}
	return d.tape.Scalar(lp), nil
}

// LogJacobian returns the log-Jacobian of the constraining transforms at
// the unconstrained point theta: the term that LogDensity and
// LogDensityGrad add when d.Jacobian is set. It runs only the transforms,
// not the model.
func (d *Density) LogJacobian(theta []float64) (_ float64, err error) {
	defer d.ev.recoverTape(&err)
	if len(theta) != d.Dim() {
		return 0, fmt.Errorf("runtime: %d parameters given, want %d", len(theta), d.Dim())
	}
	d.start()
	if err := d.setParams(d.tape.ConstVec(theta), true); err != nil {
		return 0, err
	}
	lj := d.tape.Scalar(d.ev.targetSum())
	return lj, d.tape.Err()
}

// eval records the log density at theta on the tape; grad says whether
// its gradient will be computed.
func (d *Density) eval(theta []float64, grad bool) (_ autodiff.Value, err error) {
	defer d.ev.recoverTape(&err)
	if len(theta) != d.Dim() {
		return autodiff.Value{}, fmt.Errorf("runtime: %d parameters given, want %d", len(theta), d.Dim())
	}
	d.start()
	d.ev.ctx.NoGrad = !grad // replicates and built-ins skip their backward sweeps without it
	u := d.tape.VarVec(theta)
	if err := d.setParams(u, d.Jacobian); err != nil {
		return u, err
	}
	if err := d.transformedParams(); err != nil {
		return u, err
	}
	if _, err := d.ev.execAll(d.m.IR.ModelBlock); err != nil {
		return u, err
	}
	lp := d.ev.targetSum()
	if err := d.tape.Err(); err != nil {
		return lp, err
	}
	d.nonFinite = nil
	if v := d.tape.Scalar(lp); math.IsNaN(v) || math.IsInf(v, 0) {
		d.nonFinite = d.ev.nonFiniteTerm()
	}
	return lp, nil
}

// BuiltinStates returns the working memory that built-ins keep between
// evaluations of this density (stdlib.Context.State): the chain's, then
// that of each crn replicate's evaluator, where the calls inside crn(...)
// run. A built-in's package reads its own entries (sinkhorn.CallCounts);
// it must not run concurrently with an evaluation.
func (d *Density) BuiltinStates() []map[string]any {
	out := []map[string]any{d.ev.ctx.State}
	for _, r := range d.ev.crn.reps {
		out = append(out, r.ev.ctx.State)
	}
	return out
}

// NonFiniteTerm reports, after an evaluation whose log density was not
// finite, the first term that was not (with the position of its statement
// or declaration), for messages; nil after a finite one.
func (d *Density) NonFiniteTerm() error { return d.nonFinite }

// Draw computes the output row for the unconstrained point theta: the
// constrained parameters, the transformed parameters and the generated
// quantities (drawing from rng), in the order of Model.Columns. It
// appends to dst and returns the extended slice.
func (d *Density) Draw(dst []float64, theta []float64, rng *rand.Rand) (_ []float64, err error) {
	defer d.ev.recoverTape(&err)
	d.start()
	if err := d.setParams(d.tape.ConstVec(theta), false); err != nil {
		return dst, err
	}
	for _, e := range d.m.Layout.Entries {
		dst = d.appendStanOrder(dst, e.Decl.Var, e.Dims)
	}
	return d.appendGenerated(dst, rng)
}

// Generate computes the transformed parameters and generated quantities
// (drawing from rng) at the constrained parameter values params, the
// parameters' output columns in the order of Model.Columns (as a Stan CSV
// row holds them), and appends them to dst: CmdStan's
// generate_quantities. Given the values Draw wrote (all their digits) and
// the random stream it drew from, it computes bit for bit what Draw did.
func (d *Density) Generate(dst, params []float64, rng *rand.Rand) (_ []float64, err error) {
	defer d.ev.recoverTape(&err)
	d.start()
	ev := d.ev
	at := 0
	for _, e := range d.m.Layout.Entries {
		n := product(e.Dims)
		if at+n > len(params) {
			return dst, fmt.Errorf("runtime: %d parameter values given, the model's parameters have more", len(params))
		}
		dv := &data.Value{Name: e.Decl.Var.Name, Dims: e.Dims, Data: make([]float64, n)}
		for j, k := range stanOrder(e.Dims) {
			dv.Data[k] = params[at+j]
		}
		at += n
		v, err := ev.fromData(e.Decl, e.Dims, dv)
		if err != nil {
			return dst, err
		}
		ev.frame[e.Decl.Var.Slot] = slot{v: v, dims: e.Dims, set: true}
	}
	if at != len(params) {
		return dst, fmt.Errorf("runtime: %d parameter values given, the model's parameters have %d", len(params), at)
	}
	return d.appendGenerated(dst, rng)
}

// appendGenerated runs transformed parameters and generated quantities on
// the parameters' slots and appends their output columns to dst.
func (d *Density) appendGenerated(dst []float64, rng *rand.Rand) ([]float64, error) {
	ev := d.ev
	if err := d.transformedParams(); err != nil {
		return dst, err
	}
	for _, o := range d.m.tpOut {
		dst = d.appendStanOrder(dst, o.decl.Var, o.dims)
	}
	ev.ctx.RNG = rng
	ev.compactLoops = true
	defer func() { ev.ctx.RNG, ev.compactLoops = nil, false }()
	if _, err := ev.execAll(d.m.IR.Generated); err != nil {
		return dst, err
	}
	for _, o := range d.m.gqOut {
		v, err := ev.read(o.decl.Var, o.decl.Pos)
		if err != nil {
			return dst, err
		}
		if err := ev.checkBounds(o.decl, v); err != nil {
			return dst, fmt.Errorf("generated quantity %v", err)
		}
		dst = d.appendStanOrder(dst, o.decl.Var, o.dims)
	}
	return dst, d.tape.Err()
}

// appendStanOrder appends a variable's values with the first index
// fastest (Stan's column order), from their row-major storage.
func (d *Density) appendStanOrder(dst []float64, v *ir.Var, dims []int) []float64 {
	val, err := d.ev.read(v, v.Pos)
	if err != nil {
		return dst
	}
	flat := d.ev.flatValues(val)
	for _, k := range stanOrder(dims) {
		dst = append(dst, flat[k])
	}
	return dst
}

// stanOrder returns, for each output column of a value with the given
// sizes, the row-major position of its element (the first index varies
// fastest in the output).
func stanOrder(dims []int) []int {
	n := 1
	for _, x := range dims {
		n *= x
	}
	out := make([]int, 0, n)
	idx := make([]int, len(dims))
	for k := 0; k < n; k++ {
		pos := 0
		for j := range dims {
			pos = pos*dims[j] + idx[j]
		}
		out = append(out, pos)
		for j := range idx {
			idx[j]++
			if idx[j] < dims[j] {
				break
			}
			idx[j] = 0
		}
	}
	return out
}

// CRNNoise evaluates the model once at theta and returns the standard
// noise drawn inside each crn(...) call: noise[id][k] holds replicate k's
// draws of the call with that ID, in the order they were drawn (normal
// draws for normal-type distributions, uniform ones for the others). The
// draws do not depend on theta; they are what the streams produce.
func (d *Density) CRNNoise(theta []float64) ([][][]float64, error) {
	d.ev.crn.log = make([][][]float64, len(d.m.IR.CRNs))
	defer func() { d.ev.crn.log = nil }()
	if _, err := d.eval(theta, false); err != nil {
		return nil, err
	}
	return d.ev.crn.log, nil
}

// CRNStat describes the Monte Carlo error of one crn(...) call at a point:
// the paper's estimator of the variance of the averaged loss,
// Var̂[S̄_K] = Σ_k (S_k − S̄_K)² / (K (K − 1)).
type CRNStat struct {
	Call *ir.CRN
	K    int
	Mean float64 // S̄_K
	// VarMean is Var̂[S̄_K]; NaN for K = 1.
	VarMean float64
}

// CRNStats evaluates the model once at theta and returns, for each crn
// call with a scalar body, the mean of its K replicates and the estimated
// variance of that mean.
func (d *Density) CRNStats(theta []float64) ([]CRNStat, error) {
	d.ev.crn.values = make([][]float64, len(d.m.IR.CRNs))
	defer func() { d.ev.crn.values = nil }()
	if _, err := d.eval(theta, false); err != nil {
		return nil, err
	}
	var out []CRNStat
	for id, vals := range d.ev.crn.values {
		if len(vals) == 0 {
			continue
		}
		k := float64(len(vals))
		mean := 0.0
		for _, v := range vals {
			mean += v
		}
		mean /= k
		ss := 0.0
		for _, v := range vals {
			ss += (v - mean) * (v - mean)
		}
		out = append(out, CRNStat{Call: d.m.IR.CRNs[id], K: len(vals), Mean: mean, VarMean: ss / (k * (k - 1))})
	}
	return out, nil
}
