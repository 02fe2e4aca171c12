package runtime

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/shmlang/shm/autodiff"
	"github.com/shmlang/shm/ir"
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
	// half of the machine's memory.
	MaxValues int64
	// SinkhornIters, when positive, replaces the iteration count of every
	// sinkhorn call, and CRNReplicates the K of every crn(K, ...) call:
	// the same model evaluated with another budget (shm calibrate iters
	// and crn).
	SinkhornIters, CRNReplicates int
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
}

// outVar is a block-level variable written to the output.
type outVar struct {
	decl *ir.Decl
	dims []int
}

// Bind reads the data, evaluates transformed data and lays out the
// parameters.
func Bind(m *ir.Model, set *data.Set, opts Options) (*Model, error) {
	tape := autodiff.NewTape()
	ev := newEvaluator(m.File, m, opts.Impls, tape, opts.Print)
	ev.configure(opts)
	ev.ctx.RNG = rand.New(rand.NewPCG(opts.Seed, 0x7d))
	ev.runSeed = opts.Seed
	if err := ev.bindData(m.Data, set, joinNames(opts.DataFiles)); err != nil {
		return nil, err
	}
	if _, err := ev.execAll(m.TransformedData); err != nil {
		return nil, fmt.Errorf("transformed data: %w", err)
	}
	for _, d := range blockDecls(m.TransformedData) {
		v, err := ev.read(d.Var, d.Pos)
		if err != nil {
			return nil, err
		}
		if err := ev.checkBounds(d, v); err != nil {
			return nil, fmt.Errorf("transformed data: %v", err)
		}
	}
	if err := tape.Err(); err != nil {
		return nil, fmt.Errorf("transformed data: %w", err)
	}
	bm := &Model{IR: m, opts: opts, tape: tape, frame: ev.frame}
	layout, err := ir.NewLayout(m.Params, func(d *ir.Decl) ([]int, error) { return ev.declDims(d) })
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
	for _, v := range set.Unused() {
		bm.Warnings = append(bm.Warnings, fmt.Sprintf("%s: %s is not used by the model", v.Origin(), v.Name))
	}
	return bm, nil
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
		n := 1
		for _, d := range o.dims {
			n *= d
		}
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
