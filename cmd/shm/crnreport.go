package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	goruntime "runtime"

	"github.com/shmlang/shm/runtime"
	"github.com/shmlang/shm/runtime/data"
	"github.com/shmlang/shm/runtime/diag"
)

// crnReport writes the crn report of the model bound as the run was
// (bm: the run's data and seed).
func crnReport(w io.Writer, bm *runtime.Model, f *sampleFlags, fit *diag.Fit) error {
	if len(bm.IR.CRNs) == 0 {
		return nil
	}
	initSet, err := loadInit(f.init)
	if err != nil {
		return err
	}
	return writeCRNReport(w, bm, fit, initSet, f.seed)
}

// writeCRNReport prints, for each crn(...) call of the model, the paper's
// estimate of the variance of the averaged loss, Var̂[S̄_K], at an
// initial point and at the posterior mean, to guide the choice of K.
func writeCRNReport(w io.Writer, bm *runtime.Model, fit *diag.Fit, initSet *data.Set, seed uint64) error {
	if len(bm.IR.CRNs) == 0 {
		return nil
	}
	d, err := bm.NewDensity()
	if err != nil {
		return err
	}
	d.Workers = goruntime.GOMAXPROCS(0)
	init, err := bm.Unconstrain(initSet, rand.New(rand.NewPCG(seed, 1)), 2)
	if err != nil {
		return err
	}
	means := map[string]float64{}
	for j, col := range fit.Columns {
		s, n := 0.0, 0
		for _, chain := range fit.Column(j) {
			for _, x := range chain {
				s += x
				n++
			}
		}
		means[col] = s / float64(max(n, 1))
	}
	post, err := bm.UnconstrainColumns(means)
	if err != nil {
		return err
	}
	atInit, err := d.CRNStats(init)
	if err != nil {
		return err
	}
	atPost, err := d.CRNStats(post)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "\nCommon random numbers (Var[S̄_K], the variance of the averaged loss):")
	for i, s := range atInit {
		p := math.NaN()
		if i < len(atPost) {
			p = atPost[i].VarMean
		}
		fmt.Fprintf(w, "  crn at %s (K = %d): %.3g at an initial point, %.3g at the posterior mean\n", s.Call.Position(), s.K, s.VarMean, p)
	}
	return nil
}
