package ot

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Tests of the converged mode (Options.Tol) against the independent
// reference of convref_test.go.
//
// The bounds. For one problem, let F(f) be the dual at (f, g(f)), g(f)
// the exact update of f: the value the package returns, since its last
// sweep computes g from f. F is concave with maximum V*, and
// ∂F/∂f_i = a_i − (P1)_i (balanced; a_i·e^(−f_i/ρ) − (P1)_i unbalanced),
// where the criterion bounds each row's relative error by e^tol − 1
// (package documentation). Hence
//
//	0 ≤ V* − V ≤ ⟨∇F(f), f* − f⟩ ≤ (e^tol − 1)·M·‖f* − f‖∞,
//
// M the plan's mass. With the criterion decreasing by a factor κ per
// iteration near convergence, ‖f* − f‖∞ ≤ eps·tol·(κ + κ² + …) ≤
// eps·tol·(K + 1), K = 1/(−ln κ) the number of iterations per e-fold
// decrease of the criterion, which the tests measure from the
// iteration counts at two tolerances (convK). A gradient is a sum over
// the plan's entries, each off by a factor e^((Δf_i + Δg_j)/eps), so its
// error is within 2·(K + 1)·tol of the sum of its terms' magnitudes
// (convRef.scale), and so is a log-weight's. The divergence combines
// three problems with weights 1, ½, ½ (a factor 2 on the value's bound).
// The tests allow convSafety times these (κ is not constant), plus the
// paths' rounding: 1e-12 of the values' scale, 1e-10 of the gradients'.
const (
	convSafety     = 2
	convValueRound = 1e-12
	convGradRound  = 1e-10
)

// convValueBound bounds |V − V*| at tol for problems of plan mass at most
// mass, K iterations per e-fold decrease of the criterion, and terms
// problems (1 for OT, 2 for the divergence's weights), plus rounding of
// the values' scale.
func convValueBound(tol, eps, mass, K float64, terms int, scale float64) float64 {
	return convSafety*float64(terms)*math.Expm1(tol)*mass*eps*tol*(K+1) + convValueRound*scale
}

// convGradBound bounds a gradient's error at tol relative to its scale.
func convGradBound(tol, K float64) float64 {
	return convSafety*2*(K+1)*tol + convGradRound
}

// convK measures K (iterations per e-fold decrease of the criterion) from
// the counts of the same problems at tol1 > tol2.
func convK(it1, it2 Iterations, tol1, tol2 float64, divergence bool) float64 {
	k := func(a, b int) float64 { return max(0, float64(b-a)/math.Log(tol1/tol2)) }
	K := k(it1.XY, it2.XY)
	if divergence {
		K = max(K, k(it1.XX, it2.XX), k(it1.YY, it2.YY))
	}
	return K
}

// convCase is a problem of the converged-mode tests; x = y = grid's points
// when the grid is not empty.
type convCase struct {
	name         string
	x, y, la, lb []float64
	d            int
	opt          Options
	grid         Grid
	annealRef    bool // the reference anneals (convergedRef)
	slow         bool // from the cold start, the x–y problem does not converge within the cap
}

// convSlowRef is the reference file whose x–y problem converges slowly
// (eps = 0.001 for squared distances up to about 1): from zero
// potentials it takes 10^6 iterations to tol = 1e-6, so the reference
// anneals; the package's annealing takes it to tol = 1e-8 in 325
// iterations, 127 of them annealing. It is the cap's test case.
const convSlowRef = "pc2d_small_eps_balanced_T80"

// convCases are the inputs of every reference file (eps, rho, balance and
// weights as given), random problems in 1, 2 and 3 dimensions, balanced
// and unbalanced, at eps = max(h², 0.01) and at eps = h² (h the
// resolution of x; the latter's references anneal), and random grids.
func convCases(t testing.TB) []convCase {
	var cs []convCase
	for _, r := range loadRefs(t) {
		in := &r.Inputs
		c := convCase{name: r.Name, x: flatten(in.X), y: flatten(in.Y), la: in.LogA, lb: in.LogB, d: len(in.X[0]), opt: refOptions(r, GradEnvelope),
			annealRef: r.Name == convSlowRef, slow: r.Name == convSlowRef}
		n := len(in.LogA)
		side := int(math.Round(math.Sqrt(float64(n))))
		if g := (Grid{H: side, W: side}); c.d == 2 && side*side == n && slices.Equal(c.x, g.Points()) && slices.Equal(c.y, g.Points()) {
			c.grid = g
		}
		cs = append(cs, c)
	}
	rng := rand.New(rand.NewPCG(71, 72))
	for _, d := range []int{1, 2, 3} {
		for _, bal := range []bool{true, false} {
			x, y, la, lb := randProblem(rng, 40, 35, d, bal)
			h := resolutionOf(t, x, d)
			o := Options{Eps: max(h*h, 0.01), Balanced: bal, Grad: GradEnvelope}
			if !bal {
				o.Rho = 1
			}
			cs = append(cs, convCase{name: fmt.Sprintf("random_%dd_balanced=%v", d, bal), x: x, y: y, la: la, lb: lb, d: d, opt: o})
		}
	}
	for _, d := range []int{1, 2, 3} {
		for _, bal := range []bool{true, false} {
			x, y, la, lb := randProblem(rng, 40, 35, d, bal)
			h := resolutionOf(t, x, d)
			o := Options{Eps: h * h, Balanced: bal, Grad: GradEnvelope}
			if !bal {
				o.Rho = 1
			}
			// In 1-D the cold reference takes too long (eps_0/eps ≈ 3·10^4:
			// 1.3·10^4 iterations to 1e-6 from the cold start, 6049 annealed).
			cs = append(cs, convCase{name: fmt.Sprintf("random_h2_%dd_balanced=%v", d, bal), x: x, y: y, la: la, lb: lb, d: d, opt: o, annealRef: d == 1})
		}
	}
	for _, bal := range []bool{true, false} {
		g := Grid{H: 6, W: 5}
		la, lb := make([]float64, g.N()), make([]float64, g.N())
		for i := range la {
			la[i] = math.Log(1e-3 + rng.Float64())
			lb[i] = math.Log(1e-3 + rng.Float64())
		}
		o := Options{Eps: 0.7, Rho: 2, Grad: GradEnvelope}
		if bal {
			normalize(la)
			normalize(lb)
			o = Options{Eps: 0.7, Balanced: true, Grad: GradEnvelope}
		}
		cs = append(cs, convCase{name: fmt.Sprintf("random_grid_balanced=%v", bal), x: g.Points(), y: g.Points(), la: la, lb: lb, d: 2, opt: o, grid: g})
	}
	return cs
}

// convPaths are the paths of the comparison: the scattered points' four
// (the scaling path absorbing from a scan of the pairs and from the
// sparse sweeps' culling), and the grid's on grids.
func convPaths(c convCase) []string {
	ps := []string{"dense", "sparse", "scaling", "scaling-culled"}
	if c.grid.N() > 0 {
		ps = append(ps, "grid")
	}
	return ps
}

// convModeNames name the annealing modes of the comparisons.
var convModeNames = map[annealMode]string{annealAuto: "auto", annealNever: "cold", annealAlways: "annealed"}

// convModes are the annealing modes of the comparison: the x–y problem
// annealed whenever eps_0 > eps (annealAlways), whatever annealMinRatio
// says, and from the cold start (annealNever) where it converges within
// the cap.
func convModes(c convCase) []annealMode {
	if c.slow {
		return []annealMode{annealAlways}
	}
	return []annealMode{annealAlways, annealNever}
}

// convWorkspace returns a workspace for the case on the path.
func convWorkspace(t *testing.T, c convCase, path string) *Workspace {
	t.Helper()
	w := NewWorkspaceWorkers(len(c.la), len(c.lb), c.d, 1)
	if path == "grid" {
		return w
	}
	p, err := ParsePath(strings.TrimSuffix(path, "-culled"))
	if err != nil {
		t.Fatal(err)
	}
	w.SetPath(p)
	w.e.forceCulled = path == "scaling-culled"
	return w
}

// convEval evaluates the divergence (OT with ot) of the case on w at tol,
// with the gradient gr (nil for none), by the grid path on path "grid".
func convEval(w *Workspace, c convCase, path string, tol float64, ot bool, gr *Grad) (Result, error) {
	o := c.opt
	o.Tol, o.Iters = tol, 100000
	switch {
	case path == "grid" && ot:
		v, err := w.GridOT(c.grid, c.la, c.lb, o, gr)
		return Result{OTxy: v, Iters: w.Iterations()}, err
	case path == "grid":
		return w.GridDivergence(c.grid, c.la, c.lb, o, nil, gr)
	case ot:
		v, err := w.OT(c.x, c.y, c.la, c.lb, o, gr)
		return Result{OTxy: v, Iters: w.Iterations()}, err
	}
	return w.Divergence(c.x, c.y, c.la, c.lb, o, nil, gr)
}

// newConvGrad returns the gradient buffers of the case on the path (the
// grid path's support is fixed: log-weights only).
func newConvGrad(c convCase, path string) *Grad {
	n, m := len(c.la), len(c.lb)
	if path == "grid" {
		return &Grad{LogA: make([]float64, n), LogB: make([]float64, m)}
	}
	return newGrad(n, m, c.d)
}

// checkConvGrad checks the gradient arrays of gr against the reference
// within bound times their scales. When the balanced x–y problem's plan
// splits into blocks (convRefLink), the log-weight gradients are
// compared less each block's best shift (unshiftBlocks).
//
// It returns the largest error relative to its array's scale.
func checkConvGrad(t *testing.T, what string, c convCase, gr *Grad, ref convRef, bound float64) float64 {
	t.Helper()
	var worst float64
	gla, glb := gr.LogA, gr.LogB
	if xy := ref.probs[0]; xy.nblocks > 1 && gla != nil && glb != nil {
		gla, glb = unshiftBlocks(gla, glb, ref.grad.LogA, ref.grad.LogB, c.la, c.lb, xy)
	}
	for k, a := range []struct {
		name      string
		got, want []float64
	}{{"X", gr.X, ref.grad.X}, {"Y", gr.Y, ref.grad.Y}, {"LogA", gla, ref.grad.LogA}, {"LogB", glb, ref.grad.LogB}} {
		if a.got == nil {
			continue
		}
		var diff float64
		for i := range a.want {
			diff = max(diff, math.Abs(a.got[i]-a.want[i]))
		}
		if !(diff <= bound*ref.scale[k]) {
			t.Errorf("%s: grad %s: max error %.3g > %.3g (%.3g × its scale %.3g)", what, a.name, diff, bound*ref.scale[k], bound, ref.scale[k])
		}
		worst = max(worst, diff/ref.scale[k])
	}
	return worst
}

// TestConvergedMatchesReference evaluates every case on every path at
// tol = 1e-6 and 1e-9 (divergence and OT, values and envelope
// gradients), annealed and from the cold start (convModes), and compares
// them with the converged reference within the bounds above, logging the
// iterations and the errors. It also checks that the reference converged, that the
// iteration counts are those Workspace.Iterations reports and within
// the cap, and that the value does not depend on whether a gradient was
// requested (bit for bit).
func TestConvergedMatchesReference(t *testing.T) {
	const tol1, tol2 = 1e-6, 1e-9
	for _, c := range convCases(t) {
		t.Run(c.name, func(t *testing.T) {
			refs := [2]convRef{
				convRefDivergence(c.x, c.y, c.la, c.lb, c.d, c.opt, c.annealRef),
				convRefOT(c.x, c.y, c.la, c.lb, c.d, c.opt, c.annealRef),
			}
			var mass float64
			for _, p := range refs[0].probs {
				if !(p.bestCrit <= convRefConverged) {
					t.Fatalf("the reference did not converge: criterion %.3g after %d iterations", p.bestCrit, p.iters)
				}
				mass = max(mass, p.mass)
			}
			for _, path := range convPaths(c) {
				w := convWorkspace(t, c, path)
				for _, mode := range convModes(c) {
					w.e.annealing = mode
					for k, ref := range refs {
						ot := k == 1
						what := fmt.Sprintf("%s %s divergence", path, convModeNames[mode])
						if ot {
							what = fmt.Sprintf("%s %s OT", path, convModeNames[mode])
						}
						var res [2]Result
						var grads [2]*Grad
						var annealed [2]int
						for i, tol := range []float64{tol1, tol2} {
							grads[i] = newConvGrad(c, path)
							r, err := convEval(w, c, path, tol, ot, grads[i])
							if err != nil {
								t.Fatalf("%s at tol %g: %v", what, tol, err)
							}
							res[i], annealed[i] = r, w.e.annealedXY
							if got := w.Iterations(); got != r.Iters {
								t.Errorf("%s: Result.Iters %+v, Workspace.Iterations %+v", what, r.Iters, got)
							}
							want := r.Iters.XY >= 1 && r.Iters.XY <= 100000
							if ot {
								want = want && r.Iters.XX == 0 && r.Iters.YY == 0
							} else {
								want = want && r.Iters.XX >= 1 && r.Iters.XX <= 100000 && r.Iters.YY >= 1 && r.Iters.YY <= 100000
							}
							if !want {
								t.Errorf("%s at tol %g: iterations %+v", what, tol, r.Iters)
							}
						}
						K := convK(res[0].Iters, res[1].Iters, tol1, tol2, !ot)
						terms, scale := 2, max(math.Abs(res[1].OTxy), math.Abs(res[1].OTxx), math.Abs(res[1].OTyy))
						if ot {
							terms = 1
						}
						for i, tol := range []float64{tol1, tol2} {
							v := res[i].Divergence
							if ot {
								v = res[i].OTxy
							}
							b := convValueBound(tol, c.opt.Eps, mass, K, terms, scale)
							if !(math.Abs(v-ref.v) <= b) {
								t.Errorf("%s at tol %g: value %.17g, reference %.17g: error %.3g > bound %.3g (K = %.3g)", what, tol, v, ref.v, math.Abs(v-ref.v), b, K)
							}
							ge := checkConvGrad(t, fmt.Sprintf("%s at tol %g (K = %.3g)", what, tol, K), c, grads[i], ref, convGradBound(tol, K))
							t.Logf("%s at tol %g: iterations %+v (x–y: %d annealing), K = %.3g; value error %.2g (bound %.2g), gradient error %.2g·tol of its scale (bound %.2g·tol)",
								what, tol, res[i].Iters, annealed[i], K, math.Abs(v-ref.v), b, ge/tol, convGradBound(tol, K)/tol)
						}
						// The value without a gradient: the same iterations.
						r, err := convEval(w, c, path, tol1, ot, nil)
						if err != nil {
							t.Fatal(err)
						}
						if r.Divergence != res[0].Divergence || r.OTxy != res[0].OTxy || r.Iters != res[0].Iters {
							t.Errorf("%s: without a gradient %v (%+v), with %v (%+v)", what, r.Divergence+r.OTxy, r.Iters, res[0].Divergence+res[0].OTxy, res[0].Iters)
						}
					}
				}
				w.Close()
			}
		})
	}
}

// TestConvergedPlanMarginals checks what the criterion bounds, on the plan
// at the converged potentials (Plan, and the potentials it leaves): its
// column sums are the exact marginal b (balanced) or b·e^(−g/ρ)
// (unbalanced) to rounding, and each row sum is within a factor e^(±tol)
// of a_i·m_b/m_a (balanced) or a_i·e^(−f_i/ρ) (unbalanced), up to
// rounding (1e-12 relative).
func TestConvergedPlanMarginals(t *testing.T) {
	for _, c := range convCases(t) {
		n, m := len(c.la), len(c.lb)
		w := NewWorkspace(n, m, c.d)
		for _, tol := range []float64{1e-3, 1e-6} {
			o := c.opt
			o.Tol, o.Iters = tol, 100000
			plan, err := w.Plan(c.x, c.y, c.la, c.lb, o, nil)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			f, g := w.Potentials()
			target := func(lw, pot, scale float64) float64 {
				if o.Balanced {
					return math.Exp(lw) * scale
				}
				return math.Exp(lw - pot/o.Rho)
			}
			ratio := mass(c.lb) / mass(c.la)
			var worstRow, worstCol float64 // log of the ratio sum/target
			for i := range n {
				var s float64
				for j := range m {
					s += plan[i*m+j]
				}
				if !math.IsInf(c.la[i], -1) {
					worstRow = max(worstRow, math.Abs(math.Log(s/target(c.la[i], f[i], ratio))))
				}
			}
			for j := range m {
				var s float64
				for i := range n {
					s += plan[i*m+j]
				}
				if !math.IsInf(c.lb[j], -1) {
					worstCol = max(worstCol, math.Abs(math.Log(s/target(c.lb[j], g[j], 1))))
				}
			}
			if !(worstRow <= tol+1e-12) || !(worstCol <= 1e-12) {
				t.Errorf("%s at tol %g: rows' sums within e^±%.3g of their marginal, columns' within e^±%.3g", c.name, tol, worstRow, worstCol)
			}
			if it := w.Iterations(); it.XY < 1 || it.XX != 0 || it.YY != 0 {
				t.Errorf("%s: Plan's iterations %+v", c.name, it)
			}
		}
		w.Close()
	}
}

// TestConvergedFiniteDifferences checks the envelope gradient of the
// converged value, from the cold start (these problems' eps_0/eps is
// below annealMinRatio) and annealed, against its central finite
// differences (checkFD: Richardson-extrapolated, to 1e-7 relative) at
// tol = 1e-10, where the bounds above give gradients within
// 2·(K + 1)·1e-10 (K ≤ 100 on these problems) of the converged value's,
// and the value's steps where the count or the annealing's schedule
// changes are below eps·M·1e-20·(K + 1), far below the differences'
// resolution. In balanced mode the evaluations renormalize the
// log-weights, which checkFD's directions keep to first order only: the
// shift is even in the step, so the central differences do not see it.
func TestConvergedFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	for _, tc := range []struct {
		n, m, d int
		o       Options
	}{
		{6, 5, 1, Options{Eps: 0.2, Balanced: true}},
		{8, 7, 2, Options{Eps: 0.1, Balanced: true}},
		{8, 7, 2, Options{Eps: 0.3, Rho: 1}},
		{5, 9, 3, Options{Eps: 1, Rho: 0.3}},
		{20, 17, 2, Options{Eps: 0.05, Rho: 3}},
	} {
		x, y, la, lb := randProblem(rng, tc.n, tc.m, tc.d, tc.o.Balanced)
		o := tc.o
		o.Tol, o.Iters, o.Grad = 1e-10, 100000, GradEnvelope
		for _, run := range []struct {
			path Path
			mode annealMode
		}{{PathDense, annealAuto}, {PathScaling, annealAuto}, {PathDense, annealAlways}, {PathScaling, annealAlways}} {
			path := run.path
			w := NewWorkspaceWorkers(tc.n, tc.m, tc.d, 1)
			w.SetPath(path)
			w.e.annealing = run.mode
			name := fmt.Sprintf("%d×%d d=%d %+v %v %s", tc.n, tc.m, tc.d, tc.o, path, convModeNames[run.mode])
			gr := newGrad(tc.n, tc.m, tc.d)
			if _, err := w.Divergence(x, y, la, lb, o, nil, gr); err != nil {
				t.Fatal(err)
			}
			renorm := func(la, lb []float64) ([]float64, []float64) {
				if !o.Balanced {
					return la, lb
				}
				la, lb = slices.Clone(la), slices.Clone(lb)
				normalize(la)
				normalize(lb)
				return la, lb
			}
			checkFD(t, name+" divergence", func(x, y, la, lb []float64) float64 {
				la, lb = renorm(la, lb)
				r, err := w.Divergence(x, y, la, lb, o, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				return r.Divergence
			}, x, y, la, lb, gr, rng, o.Balanced)
			gro := newGrad(tc.n, tc.m, tc.d)
			if _, err := w.OT(x, y, la, lb, o, gro); err != nil {
				t.Fatal(err)
			}
			checkFD(t, name+" OT", func(x, y, la, lb []float64) float64 {
				la, lb = renorm(la, lb)
				v, err := w.OT(x, y, la, lb, o, nil)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}, x, y, la, lb, gro, rng, o.Balanced)
			w.Close()
		}
	}
}

// TestConvergedCap checks the error of an evaluation whose iterations
// reach the cap first, on every entry point: it wraps ErrNotConverged,
// names the problem, tol, the cap and the criterion reached, and
// Workspace.Iterations reports the cap for that problem.
func TestConvergedCap(t *testing.T) {
	var slow *refFile
	for _, r := range loadRefs(t) {
		if r.Name == convSlowRef {
			slow = r
		}
	}
	if slow == nil {
		t.Fatalf("reference %s not found", convSlowRef)
	}
	x, y := flatten(slow.Inputs.X), flatten(slow.Inputs.Y)
	la, lb := slow.Inputs.LogA, slow.Inputs.LogB
	n, m, d := len(la), len(lb), 2
	o := refOptions(slow, GradEnvelope)
	o.Tol, o.Iters = 1e-8, 200
	inAnnealing := o // a cap within the annealing
	inAnnealing.Iters = 5
	g := Grid{H: 4, W: 3}
	gw := uniformLogW(g.N())
	og := Options{Eps: 0.5, Balanced: true, Grad: GradEnvelope, Tol: 1e-12, Iters: 2}
	for _, tc := range []struct {
		name    string
		problem string
		cap     int
		also    string // the message also says it
		run     func(w *Workspace) error
	}{
		{"Divergence", "x–y", 200, "127 of them annealing", func(w *Workspace) error {
			_, err := w.Divergence(x, y, la, lb, o, nil, newGrad(n, m, d))
			return err
		}},
		{"OT", "x–y", 200, "127 of them annealing", func(w *Workspace) error { _, err := w.OT(x, y, la, lb, o, nil); return err }},
		{"OT within the annealing", "x–y", 5, "4 of them annealing", func(w *Workspace) error {
			_, err := w.OT(x, y, la, lb, inAnnealing, nil)
			return err
		}},
		{"Plan", "x–y", 200, "127 of them annealing", func(w *Workspace) error { _, err := w.Plan(x, y, la, lb, o, nil); return err }},
		{"GridDivergence", "x–y", 2, "criterion", func(w *Workspace) error {
			_, err := w.GridDivergence(g, gw, gw, og, nil, nil)
			return err
		}},
		{"GridOT", "x–y", 2, "criterion", func(w *Workspace) error { _, err := w.GridOT(g, gw, gw, og, nil); return err }},
		{"GridSelfTerm", "y–y", 2, "criterion", func(w *Workspace) error { _, err := w.GridSelfTerm(g, gw, og); return err }},
	} {
		for _, path := range []Path{PathDense, PathSparse, PathScaling} {
			w := NewWorkspace(n, m, d)
			w.SetPath(path)
			err := tc.run(w)
			switch {
			case !errors.Is(err, ErrNotConverged):
				t.Errorf("%s on %v: error %v, want ErrNotConverged", tc.name, path, err)
			default:
				msg := err.Error()
				for _, want := range []string{"the " + tc.problem + " problem", "tol = ", fmt.Sprintf("iters = %d", tc.cap), "criterion", tc.also} {
					if !strings.Contains(msg, want) {
						t.Errorf("%s on %v: %q does not say %q", tc.name, path, msg, want)
					}
				}
			}
			it := w.Iterations()
			got := it.XY
			if tc.problem == "y–y" {
				got = it.YY
			}
			if got != tc.cap {
				t.Errorf("%s on %v: iterations %+v, want the cap %d", tc.name, path, it, tc.cap)
			}
			w.Close()
		}
	}
	// A self term that does not converge: a symmetric problem that stops
	// at the cap of one iteration.
	w := NewWorkspace(m, m, d)
	one := o
	one.Tol, one.Iters = 1e-12, 1
	if _, err := w.SelfTerm(y, lb, one); !errors.Is(err, ErrNotConverged) || !strings.Contains(err.Error(), "the y–y problem") {
		t.Errorf("SelfTerm: error %v, want ErrNotConverged naming the y–y problem", err)
	}
}

// TestConvergedValidation checks the options' errors on every entry point:
// tol negative, NaN or infinite, and tol > 0 with the unrolled gradient.
func TestConvergedValidation(t *testing.T) {
	rng := rand.New(rand.NewPCG(75, 76))
	x, y, la, lb := randProblem(rng, 5, 4, 2, true)
	g := Grid{H: 2, W: 2}
	gw := uniformLogW(4)
	base := Options{Eps: 0.5, Balanced: true, Iters: 10, Grad: GradEnvelope}
	entries := map[string]func(w *Workspace, o Options) error{
		"Divergence": func(w *Workspace, o Options) error { _, err := w.Divergence(x, y, la, lb, o, nil, nil); return err },
		"OT":         func(w *Workspace, o Options) error { _, err := w.OT(x, y, la, lb, o, nil); return err },
		"Plan":       func(w *Workspace, o Options) error { _, err := w.Plan(x, y, la, lb, o, nil); return err },
		"SelfTerm":   func(w *Workspace, o Options) error { _, err := w.SelfTerm(y, lb, o); return err },
		"GridDivergence": func(w *Workspace, o Options) error {
			_, err := w.GridDivergence(g, gw, gw, o, nil, nil)
			return err
		},
		"GridOT":       func(w *Workspace, o Options) error { _, err := w.GridOT(g, gw, gw, o, nil); return err },
		"GridSelfTerm": func(w *Workspace, o Options) error { _, err := w.GridSelfTerm(g, gw, o); return err },
	}
	for _, tc := range []struct {
		name string
		tol  float64
		mode GradMode
		want string
	}{
		{"negative", -1e-6, GradEnvelope, "tol must be finite and ≥ 0"},
		{"NaN", math.NaN(), GradEnvelope, "tol must be finite and ≥ 0"},
		{"+Inf", math.Inf(1), GradEnvelope, "tol must be finite and ≥ 0"},
		{"-Inf", math.Inf(-1), GradEnvelope, "tol must be finite and ≥ 0"},
		{"unrolled", 1e-6, GradUnrolled, "needs the envelope gradient"},
	} {
		o := base
		o.Tol, o.Grad = tc.tol, tc.mode
		for name, run := range entries {
			w := NewWorkspace(5, 4, 2)
			if err := run(w, o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s with tol %s: error %v, want %q", name, tc.name, err, tc.want)
			}
			w.Close()
		}
	}
	// The valid options are accepted, and with tol = 0 the counts are
	// Iters.
	w := NewWorkspace(5, 4, 2)
	defer w.Close()
	for _, o := range []Options{base, {Eps: 0.5, Balanced: true, Iters: 10, Grad: GradUnrolled}} {
		res, err := w.Divergence(x, y, la, lb, o, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := (Iterations{10, 10, 10}); res.Iters != want || w.Iterations() != want {
			t.Errorf("%+v: iterations %+v and %+v, want %+v", o, res.Iters, w.Iterations(), want)
		}
	}
}

// TestConvergedSelfTerm checks the cached y–y term in the converged mode:
// it gives the divergence of the same iterations (bit for bit) and its
// count, and it is refused for another tol.
func TestConvergedSelfTerm(t *testing.T) {
	rng := rand.New(rand.NewPCG(77, 78))
	for _, bal := range []bool{true, false} {
		x, y, la, lb := randProblem(rng, 40, 35, 2, bal)
		o := Options{Eps: 0.1, Balanced: bal, Rho: 2, Iters: 10000, Tol: 1e-8, Grad: GradEnvelope}
		for _, path := range []Path{PathDense, PathSparse, PathScaling} {
			w := NewWorkspace(40, 35, 2)
			w.SetPath(path)
			st, err := w.SelfTerm(y, lb, o)
			if err != nil {
				t.Fatal(err)
			}
			gc, gu := newGrad(40, 35, 2), newGrad(40, 35, 2)
			cached, err := w.Divergence(x, y, la, lb, o, st, gc)
			if err != nil {
				t.Fatal(err)
			}
			uncached, err := w.Divergence(x, y, la, lb, o, nil, gu)
			if err != nil {
				t.Fatal(err)
			}
			if cached.Divergence != uncached.Divergence || cached.OTyy != uncached.OTyy || !cached.YYFromCache {
				t.Errorf("%v balanced=%v: cached %+v, uncached %+v", path, bal, cached, uncached)
			}
			if cached.Iters != uncached.Iters || st.Iters() != uncached.Iters.YY {
				t.Errorf("%v balanced=%v: iterations cached %+v (term %d), uncached %+v", path, bal, cached.Iters, st.Iters(), uncached.Iters)
			}
			if !slices.Equal(gc.X, gu.X) || !slices.Equal(gc.LogA, gu.LogA) {
				t.Errorf("%v balanced=%v: the x gradients depend on the cache", path, bal)
			}
			for _, other := range []float64{0, 1e-6} {
				oo := o
				oo.Tol = other
				if _, err := w.Divergence(x, y, la, lb, oo, st, nil); err == nil || !strings.Contains(err.Error(), "cached y–y term") {
					t.Errorf("%v: a term of tol 1e-8 used at tol %g: error %v", path, other, err)
				}
			}
			w.Close()
		}
	}
}

// TestConvergedNoAllocations checks that the converged mode allocates
// nothing per evaluation in steady state (its previous potentials and the
// translation's buffer are the workspace's), balanced and unbalanced, on
// the dense, sparse and scaling paths, from the cold start and annealing:
// divergences with the envelope gradient and a cached y–y term, and OT, x
// changing at every evaluation.
func TestConvergedNoAllocations(t *testing.T) {
	x, y, la, lb, opt := sparseBenchProblem(t, 150, 2)
	xs := [2][]float64{x, slices.Clone(x)}
	for k := range xs[1] {
		xs[1][k] *= 1.01
	}
	for _, o := range []Options{
		{Eps: 4 * opt.Eps, Balanced: true, Iters: 10000, Tol: 1e-6, Grad: GradEnvelope},
		{Eps: 4 * opt.Eps, Rho: 1, Iters: 10000, Tol: 1e-6, Grad: GradEnvelope},
	} {
		for _, tc := range []struct {
			path Path
			mode annealMode
		}{{PathDense, annealNever}, {PathSparse, annealNever}, {PathScaling, annealNever}, {PathDense, annealAlways}, {PathSparse, annealAlways}, {PathScaling, annealAlways}} {
			path := tc.path
			w := NewWorkspaceWorkers(150, 150, 2, 1)
			w.SetPath(path)
			w.e.annealing = tc.mode
			yy, err := w.SelfTerm(y, lb, o)
			if err != nil {
				t.Fatal(err)
			}
			gr := &Grad{X: make([]float64, len(x)), LogA: make([]float64, 150)}
			k := 0
			run := func() {
				k++
				if _, err := w.Divergence(xs[k%2], y, la, lb, o, yy, gr); err != nil {
					t.Fatal(err)
				}
				if _, err := w.OT(xs[k%2], y, la, lb, o, gr); err != nil {
					t.Fatal(err)
				}
			}
			run()
			run()
			if a := testing.AllocsPerRun(4, run); a != 0 {
				t.Errorf("%v %s balanced=%v: %v allocations per evaluation, want 0", path, convModeNames[tc.mode], o.Balanced, a)
			}
			if tc.mode == annealAlways && w.e.annealedXY == 0 {
				t.Errorf("%v balanced=%v: the x–y problem was not annealed", path, o.Balanced)
			}
			w.Close()
		}
	}
}

// TestConvergedAnnealing checks when the converged mode anneals and what
// it gains, on a problem of Experiment A's kind (sparseBenchProblem, 1-D,
// 120 points, eps = (alpha·h)²) on the dense and scaling paths: by
// default (annealAuto) the x–y problem is annealed at alpha = 4
// (eps_0/eps ≈ 10^4 > annealMinRatio) and not at alpha = 16 (≈ 660), the
// symmetric problems never; the annealing's iterations count in
// Result.Iters; annealed, the x–y problem at alpha = 4 reaches tol = 1e-3
// in fewer iterations than from the cold start, annealing included
// (measured: 3298 against 5666).
func TestConvergedAnnealing(t *testing.T) {
	x, y, la, lb, opt := sparseBenchProblem(t, 120, 1)
	diam := (&engine{d: 1}).diameterSq(side{pts: x, n: 120}, side{pts: y, n: 120})
	for _, path := range []Path{PathDense, PathScaling} {
		for _, alpha := range []float64{4, 16} {
			o := opt
			o.Eps *= alpha * alpha
			o.Tol, o.Iters, o.Grad = 1e-3, 100000, GradEnvelope
			annealed := diam > annealMinRatio*o.Eps
			if want := alpha == 4; annealed != want {
				t.Fatalf("alpha = %g: eps_0/eps = %.3g: annealed %v, want %v", alpha, diam/o.Eps, annealed, want)
			}
			var iters [3]int
			for _, mode := range []annealMode{annealAuto, annealNever, annealAlways} {
				w := NewWorkspaceWorkers(120, 120, 1, 1)
				w.SetPath(path)
				w.e.annealing = mode
				res, err := w.Divergence(x, y, la, lb, o, nil, nil)
				if err != nil {
					t.Fatalf("%v alpha = %g %s: %v", path, alpha, convModeNames[mode], err)
				}
				an := w.e.annealedXY
				wantAnnealed := mode == annealAlways || mode == annealAuto && annealed
				if (an > 0) != wantAnnealed || an >= res.Iters.XY {
					t.Errorf("%v alpha = %g %s: %d of the x–y problem's %d iterations annealing, want annealing %v", path, alpha, convModeNames[mode], an, res.Iters.XY, wantAnnealed)
				}
				if _, err := w.SelfTerm(y, lb, o); err != nil || w.e.annealed != 0 {
					t.Errorf("%v alpha = %g %s: the y–y problem annealed %d iterations (%v)", path, alpha, convModeNames[mode], w.e.annealed, err)
				}
				iters[mode] = res.Iters.XY
				t.Logf("%v alpha = %g %s: iterations %+v, %d of the x–y problem's annealing", path, alpha, convModeNames[mode], res.Iters, an)
				w.Close()
			}
			if alpha == 4 && !(iters[annealAlways] < iters[annealNever]*7/10) {
				t.Errorf("%v alpha = 4: %d iterations annealed, %d from the cold start", path, iters[annealAlways], iters[annealNever])
			}
		}
	}
}
