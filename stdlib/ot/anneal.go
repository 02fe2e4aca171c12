package ot

import "math"

// Annealing (eps-scaling) in the converged mode.
//
// From zero potentials, the iterations at a small eps first spend a long
// transient moving the potentials across the cost's range: where mass
// must leave a region, they move by about eps·ln(mass ratio) per
// iteration, so that transient lasts of the order of max C/eps
// iterations. An x–y problem of the converged mode therefore starts at
// eps_0 = the squared diagonal of the bounding box of both measures
// (Kosowsky and Yuille 1994; Schmitzer 2019; GeomLoss's start, Feydy et
// al. 2019), where from zero the iterations converge in one or two, and
// multiplies eps by annealFactor per stage down to the target, carrying
// the potentials from stage to stage: each stage iterates until its own
// criterion (checkConverged's, in units of its eps) is at most annealTol,
// or annealMaxIters times. The iterations at the target then start near
// its fixed point, which the cold start also converges to, so that Tol,
// its bounds and the envelope gradient mean what they meant. The
// schedule depends on the inputs only.
//
// The stages run as the target's iterations do, each stage's sweeps at
// its eps: the dense, sparse and grid sweeps take eps per sweep, and the
// scaling path absorbs a kernel at each stage's eps (newEps), since its
// kernels hold e^(−C/eps).
//
// The symmetric problems (x–x, y–y) are not annealed: their averaged
// iterations converge from zero in a handful (package documentation),
// which stages would only lengthen. Nor are problems whose eps is at
// least eps_0/annealMinRatio: below that ratio the cold start converges in
// a few hundred iterations, and the stages' iterations and absorptions
// cost as much as they save, or more.

// annealFactor, annealTol and annealMaxIters are the schedule: eps_(k+1) =
// annealFactor·eps_k, each stage iterating until its criterion is at most
// annealTol or annealMaxIters times. Measured on Experiment A's problems
// at eps = h² and (4h)² (BenchmarkConverged, TestConvergedAnnealing and
// the package documentation): a stage must move a block of points whose
// masses differ by a ratio μ by about (1/annealFactor − 1)·ln(n) units of
// its eps, at ln μ per iteration, so stages that end after one or two
// iterations (GeomLoss's) leave the potentials further and further
// behind as eps decreases: the first iteration at the target found the
// criterion at 3, and 1-D n = 1024 at eps = (4h)² reached 0.1 after 10^5
// iterations, against 903 with these constants. Halving (0.5) beat
// quartering (0.25: 6786 iterations), and 0.7 (more stages) was no
// better at tol ≤ 1e-2; a looser annealTol (0.3: 40994) or fewer
// iterations per stage (10: 14895) left more behind.
const (
	annealFactor   = 0.5
	annealTol      = 0.1
	annealMaxIters = 30
)

// annealMinRatio is the eps_0/eps above which the converged mode anneals
// an x–y problem (annealAuto, the default): measured at tol = 1e-3 and
// 1e-6 (one worker, the time of a divergence with its gradient), the
// annealing lost below it (2-D, 362 points, eps_0/eps = 1120: 43 against
// 19 ms; 280: 20 against 9 ms) and won or tied above it (2520: 61
// against 64 ms; 4480: 87 against 229 ms; 10^4: 144 against 207 ms).
const annealMinRatio = 1 << 12

// annealMode says when the converged mode anneals an x–y problem.
type annealMode int

const (
	annealAuto   annealMode = iota // when eps_0/eps > annealMinRatio
	annealNever                    // never: the cold start (tests and benchmarks)
	annealAlways                   // whenever eps_0 > eps (tests)
)

// diameterSq returns the squared diagonal of the bounding box of the
// points of p and q (of the grid on the grid path).
func (e *engine) diameterSq(p, q side) float64 {
	if e.onGrid {
		h, w := float64(e.grid.g.H-1), float64(e.grid.g.W-1)
		return h*h + w*w
	}
	d := e.d
	var s float64
	for k := range d {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, pts := range [2][]float64{p.pts[:p.n*d], q.pts[:q.n*d]} {
			for i := k; i < len(pts); i += d {
				lo, hi = min(lo, pts[i]), max(hi, pts[i])
			}
		}
		s += (hi - lo) * (hi - lo)
	}
	return s
}

// anneal runs the annealing stages of the problem (p, q) of the converged
// mode (solve), from the potentials f and g (zero), and returns the
// number of iterations they took (e.annealed), at most c.iters − 1 (the
// cap leaves one iteration at the target). It leaves their potentials in
// f and g and, as the start of the next iteration, in (e.fPrev, e.gPrev)
// (restart). It runs none for a symmetric problem or as e.annealing says.
func (e *engine) anneal(p, q side, f, g []float64, c consts) int {
	e.annealed = 0
	if e.annealing == annealNever || symmetric(p, q) {
		return 0
	}
	eps0 := e.diameterSq(p, q)
	if e.annealing == annealAuto && !(eps0 > annealMinRatio*c.eps) {
		return 0
	}
	sides := [2]side{p, q}
	u := e.u
	t, budget := 0, c.iters-1
	defer e.newEps() // the target's sweeps start afresh
	for ek := eps0; ek > c.eps && t < budget; ek *= annealFactor {
		ck := c
		ck.eps, ck.invEps = ek, 1/ek
		if !c.balanced {
			ck.tau = c.rho / (c.rho + ek)
		}
		e.newEps()
		for s := 0; s < annealMaxIters && t < budget; s++ {
			e.forwardSweep(0, sides, u[:q.n], g, f, ck, -1)
			e.forwardSweep(1, sides, u[:p.n], f, g, ck, -1)
			t++
			e.annealed = t
			r := e.criterion(f, g, ck)
			e.restart(p, q, f, g, ck)
			if e.halt() || math.IsNaN(r) {
				// The target's first iteration stops at once (halted) or
				// with a NaN criterion.
				return t
			}
			if r <= annealTol {
				break
			}
		}
	}
	return t
}

// newEps drops what the sweeps keep from one sweep to the next for a
// given eps, which an annealing stage changes: the sparse sweeps' cullings
// that later sweeps reuse and PathAuto's count of dense sweeps before the
// next culling, and the scaling path's kernels (the next sweep absorbs
// one at the new eps), their margin and whether they failed.
func (e *engine) newEps() {
	if !e.sparseOn {
		return
	}
	for k := range e.sp.cands {
		e.sp.cands[k].ok = false
	}
	e.sp.skip = 0
	if e.scalingOn {
		sc := e.sc
		sc.n, sc.stored, sc.broken, sc.chosen = 0, 0, false, 0
		sc.cur, sc.resident = [2]int{-1, -1}, [2]int32{-1, -1}
	}
}
