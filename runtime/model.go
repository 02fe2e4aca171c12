package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/stdlib"
)

// Options configure Bind.
type Options struct {
	// Impls implements the built-ins.
	Impls stdlib.Impls
	// Print receives the output of print(); nil discards it.
	Print io.Writer
	// Seed seeds the random draws of transformed data.
	Seed uint64
	// DataFiles names the data sources, for messages.
	DataFiles []string
	// Context, when not nil, stops long evaluations: the loops of
	// transformed data and of every density evaluation check it, and
	// return an error wrapping its Err() once it is done.
	Context context.Context
	// MaxValues bounds the values (float64 elements) one evaluation may
	// hold on its tape, checked with the interruptions of loops; 0 means
	// an eighth of the memory the process may use (sysmem.Total: the
	// machine's, or a smaller address-space or control-group limit).
	MaxValues int64
	// MemoryShare, when above 1, is the number of runs side by side that
	// share the memory (calibrate's workers): the default of MaxValues
	// is divided by it.
	MemoryShare int
	// SinkhornIters, when positive, replaces the iteration count of every
	// sinkhorn call, and CRNReplicates the K of every crn(K, ...) call:
	// the same model evaluated with another budget (shm calibrate iters
	// and crn).
	SinkhornIters, CRNReplicates int
	// compactEvery, when positive, makes loops that take no gradient
	// compact the tape after this much growth instead of
	// compactMinValues (tests: at nearly every iteration); negative, never.
	compactEvery int
	// Refine evaluates the iterative call (ir.Model.Iterative) at a
	// position with a budget k times finer (stdlib.Context.Refine): the
	// post-sampling report's reference for each sinkhorn call.
	Refine map[lang.Pos]int
	// Hold gives values to block-level transformed data variables by
	// name: such a variable takes the value given instead of its
	// initializer's (which is not evaluated), with the declaration's
	// sizes and constraints checked. A calibration on resampled data holds
	// the loss's settings (eps from the resolution of the data as given).
	Hold map[string]*data.Value
}

// Model is a checked model bound to its data: data and transformed data
// evaluated, the parameter layout decided. It is immutable and may be
// shared by several chains.
type Model struct {
	IR     *ir.Model
	Layout *ir.Layout
	// Warnings lists data names the model does not use.
	Warnings []string

	opts  Options
	tape  *autodiff.Tape // holds the data and transformed data
	frame []slot         // data and transformed data values
	// output describes the transformed parameters and generated
	// quantities written with each draw.
	tpOut, gqOut []outVar
	// randomTD: transformed data drew random numbers (an _rng call),
	// so its values depend on Options.Seed.
	randomTD bool
}

// outVar is a block-level variable written to the output.
type outVar struct {
	decl *ir.Decl
	dims []int
}

// Bind reads the data, evaluates transformed data and lays out the
// parameters.
func Bind(m *ir.Model, set *data.Set, opts Options) (_ *Model, err error) {
	tape := autodiff.NewTape()
	ev := newEvaluator(m.File, m, opts.Impls, tape, opts.Print)
	ev.configure(opts)
	defer ev.recoverTape(&err)
	tdStream := &countingSource{src: rand.NewPCG(opts.Seed, 0x7d)}
	ev.ctx.RNG = rand.New(tdStream)
	ev.crn.runSeed = opts.Seed
	dataWarnings, err := ev.bindData(m.Data, set, joinNames(opts.DataFiles))
	if err != nil {
		return nil, err
	}
	if err := ev.bindTransformedData(m, tape, opts.Hold); err != nil {
		// The data's warnings (an infinite value) often explain it.
		return nil, &WarnedError{Err: err, Warnings: dataWarnings}
	}
	bm := &Model{IR: m, opts: opts, tape: tape, frame: ev.frame, randomTD: tdStream.n > 0}
	layout, err := ir.NewLayout(opts.Context, m.Params, func(d *ir.Decl) ([]int, error) { return ev.declDims(d) })
	if de := (*ir.DeclError)(nil); errors.As(err, &de) {
		return nil, ev.errorf(de.Decl.Pos, "%s", de.Msg)
	}
	if err != nil {
		return nil, err
	}
	bm.Layout = layout
	for _, d := range blockDecls(m.TransformedParams) {
		dims, err := ev.declDims(d)
		if err != nil {
			return nil, err
		}
		bm.tpOut = append(bm.tpOut, outVar{d, dims})
	}
	for _, d := range blockDecls(m.Generated) {
		dims, err := ev.declDims(d)
		if err != nil {
			return nil, err
		}
		bm.gqOut = append(bm.gqOut, outVar{d, dims})
	}
	bm.Warnings = append(bm.Warnings, set.Notes()...)
	bm.Warnings = append(bm.Warnings, dataWarnings...)
	bm.Warnings = append(bm.Warnings, unusedWarnings(set.Unused())...)
	return bm, nil
}

// bindTransformedData runs the transformed data block and checks its
// declarations' constraints.
func (ev *evaluator) bindTransformedData(m *ir.Model, tape *autodiff.Tape, hold map[string]*data.Value) error {
	ev.compactLoops = true
	err := ev.transformedData(m.TransformedData, hold)
	ev.compactLoops = false
	if err != nil {
		return fmt.Errorf("transformed data: %w", err)
	}
	for _, d := range blockDecls(m.TransformedData) {
		v, err := ev.read(d.Var, d.Pos)
		if err != nil {
			return err
		}
		if err := ev.checkBounds(d, v); err != nil {
			return fmt.Errorf("transformed data: %v", err)
		}
	}
	if err := tape.Err(); err != nil {
		return fmt.Errorf("transformed data: %w", err)
	}
	return nil
}

// WarnedError is an error after warnings that may explain it (the data's,
// when transformed data fails): its message ends with them.
type WarnedError struct {
	Err      error
	Warnings []string
}

func (e *WarnedError) Error() string {
	msg := e.Err.Error()
	for _, w := range e.Warnings {
		msg += "\n  after the warning: " + w
	}
	return msg
}

func (e *WarnedError) Unwrap() error { return e.Err }

// maxUnusedNamed is the most unused values of one file warned about one
// by one; beyond it, one line per file names the first of them and counts
// the rest.
const maxUnusedNamed = 5

// unusedWarnings are the warnings about data values the model does not
// declare.
func unusedWarnings(unused []*data.Value) []string {
	byFile := map[string][]*data.Value{}
	var files []string
	for _, v := range unused {
		f := v.File()
		if _, ok := byFile[f]; !ok {
			files = append(files, f)
		}
		byFile[f] = append(byFile[f], v)
	}
	var out []string
	for _, f := range files {
		vs := byFile[f]
		if len(vs) <= maxUnusedNamed {
			for _, v := range vs {
				out = append(out, fmt.Sprintf("%s: %s is not used by the model", v.Origin(), v.PrintableName()))
			}
			continue
		}
		names := make([]string, maxUnusedNamed)
		for i, v := range vs[:maxUnusedNamed] {
			names[i] = v.PrintableName()
		}
		place := f
		if place == "" {
			place = "--set"
		}
		out = append(out, fmt.Sprintf("%s: %d values are not used by the model: %s, ... (%d more)", place, len(vs), strings.Join(names, ", "), len(vs)-maxUnusedNamed))
	}
	return out
}

// WithContext returns a copy of m, sharing its data and transformed data,
// whose density evaluations (NewDensity, Unconstrain) are stopped by ctx
// instead of the Context m was bound with: for a model bound under a
// context that ends with one command (an interactive line) and kept for
// later ones.
func (m *Model) WithContext(ctx context.Context) *Model {
	c := *m
	c.opts.Context = ctx
	return &c
}

// blockDecls returns the block-level declarations among stmts.
func blockDecls(stmts []ir.Stmt) []*ir.Decl {
	var out []*ir.Decl
	for _, s := range stmts {
		if d, ok := s.(*ir.DeclStmt); ok {
			out = append(out, d.Decl)
		}
	}
	return out
}

// Dim returns the number of unconstrained parameters.
func (m *Model) Dim() int { return m.Layout.Dim }

// Columns returns the output column names: parameters, transformed
// parameters and generated quantities, in Stan's order and naming.
func (m *Model) Columns() []string {
	var cols []string
	for _, e := range m.Layout.Entries {
		cols = append(cols, e.Columns...)
	}
	for _, o := range append(append([]outVar{}, m.tpOut...), m.gqOut...) {
		cols = append(cols, ir.ColumnNames(o.decl.Var.Name, o.dims)...)
	}
	return cols
}

// ParamColumns returns the parameters' output columns: the first ones of
// Columns, in their order.
func (m *Model) ParamColumns() []string {
	var cols []string
	for _, e := range m.Layout.Entries {
		cols = append(cols, e.Columns...)
	}
	return cols
}

// ParamValues returns the parameters' values of an output row (of
// Density.Draw, the order of Columns) by column name.
func (m *Model) ParamValues(row []float64) map[string]float64 {
	out := map[string]float64{}
	for j, c := range m.ParamColumns() {
		out[c] = row[j]
	}
	return out
}

// OutputValue returns the value of the parameter, transformed parameter or
// generated quantity name from a row of Density.Draw, with its sizes and
// its entries in row-major order (the order of data files).
func (m *Model) OutputValue(row []float64, name string) (*data.Value, error) {
	type out struct {
		name string
		dims []int
	}
	var outs []out
	for _, e := range m.Layout.Entries {
		outs = append(outs, out{e.Decl.Var.Name, e.Dims})
	}
	for _, o := range append(append([]outVar{}, m.tpOut...), m.gqOut...) {
		outs = append(outs, out{o.decl.Var.Name, o.dims})
	}
	at := 0
	for _, o := range outs {
		n := product(o.dims)
		if o.name != name {
			at += n
			continue
		}
		if at+n > len(row) {
			return nil, fmt.Errorf("a row of %d values has no %s", len(row), name)
		}
		v := &data.Value{Name: name, Dims: append([]int(nil), o.dims...), Data: make([]float64, n)}
		for j, k := range stanOrder(o.dims) {
			v.Data[k] = row[at+j]
		}
		return v, nil
	}
	return nil, fmt.Errorf("the model has no output variable %s", name)
}

// transformedData runs the transformed data block, the variables of hold
// taking their given values.
func (ev *evaluator) transformedData(stmts []ir.Stmt, hold map[string]*data.Value) error {
	for name := range hold {
		found := false
		for _, d := range blockDecls(stmts) {
			found = found || d.Var.Name == name
		}
		if !found {
			return fmt.Errorf("%s is not a variable of transformed data (held values replace transformed data)", name)
		}
	}
	for _, s := range stmts {
		if ds, ok := s.(*ir.DeclStmt); ok && hold[ds.Decl.Var.Name] != nil {
			d := ds.Decl
			dims, err := ev.declDims(d)
			if err != nil {
				return err
			}
			v, err := ev.fromData(d, dims, hold[d.Var.Name])
			if err != nil {
				return err
			}
			ev.frame[d.Var.Slot] = slot{v: v, dims: dims, set: true}
			continue
		}
		if _, err := ev.execAll([]ir.Stmt{s}); err != nil {
			return err
		}
	}
	return nil
}

// TransformedData returns the value of a block-level transformed data
// variable (an int or real scalar or container), row-major with its sizes.
func (m *Model) TransformedData(name string) (*data.Value, error) {
	if d := findDecl(blockDecls(m.IR.TransformedData), name); d != nil {
		return m.slotValue(d)
	}
	return nil, fmt.Errorf("the model has no transformed data variable %s", name)
}

// DataValue returns the value of a variable of the data block as the
// model was bound, row-major with its sizes.
func (m *Model) DataValue(name string) (*data.Value, error) {
	if d := findDecl(m.IR.Data, name); d != nil {
		return m.slotValue(d)
	}
	return nil, fmt.Errorf("the model has no data variable %s", name)
}

// findDecl returns the declaration of name among decls, nil for none.
func findDecl(decls []*ir.Decl, name string) *ir.Decl {
	for _, d := range decls {
		if d.Var.Name == name {
			return d
		}
	}
	return nil
}

// slotValue reads the value of a block-level data or transformed data
// declaration from the model's frame.
func (m *Model) slotValue(d *ir.Decl) (*data.Value, error) {
	s := m.frame[d.Var.Slot]
	if !s.set {
		return nil, fmt.Errorf("%s has no value", d.Var.Name)
	}
	v := &data.Value{Name: d.Var.Name, Dims: append([]int(nil), s.dims...), IsInt: d.Var.Type.Base == lang.Int}
	switch {
	case d.Var.Type == lang.IntType:
		v.Data = []float64{float64(s.v.Int)}
	case d.Var.Type.Base == lang.Int:
		for _, x := range s.v.Ints {
			v.Data = append(v.Data, float64(x))
		}
	case d.Var.Type.Dims > 0 && d.Var.Type.Base.IsLinalg():
		for _, e := range s.v.Elems {
			v.Data = append(v.Data, m.tape.Val(e.AD)...)
		}
	default:
		v.Data = append(v.Data, m.tape.Val(s.v.AD)...)
	}
	return v, nil
}
