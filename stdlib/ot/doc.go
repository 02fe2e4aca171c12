// Package ot implements the fixed-iteration log-domain Sinkhorn algorithm of
// the paper's Algorithm 2 on the CPU, and its iterations run to a
// tolerance (Options.Tol): the entropic optimal-transport value
// (balanced, or unbalanced with the dual of Séjourné et al.), the debiased
// Sinkhorn divergence
//
//	S = OT_xy − ½·OT_xx − ½·OT_yy + (eps/2)·(m_a − m_b)²,
//
// the transport plan at the final potentials, and the gradients of these
// values with respect to the support points and the log-weights.
//
// # Conventions
//
// The conventions are those of shared/testdata/sinkhorn/README.md. Points are
// row-major n×d slices of float64, weights are log-weights, and the cost is
// the squared Euclidean distance C_ij = Σ_k (x_ik − y_jk)², always computed
// from the coordinate differences. The potentials start at zero and exactly
// Options.Iters iterations are run, each updating f and then g with the new
// f:
//
//	f_i ← −tau·eps·LSE_j(g_j/eps − C_ij/eps + log b_j)
//	g_j ← −tau·eps·LSE_i(f_i/eps − C_ij/eps + log a_i)
//
// with tau = 1 (balanced) or rho/(rho+eps) (unbalanced). With Options.Tol
// = 0, the default, there is no convergence test: the value is a smooth
// function of the inputs for a fixed number of iterations, and its
// gradients are exact derivatives of that function. With Tol > 0 the
// iterations run until a criterion holds (see "The converged mode").
//
// # API
//
// A Workspace (NewWorkspace(n, m, d)) owns every buffer and is used by one
// goroutine at a time:
//
//	Divergence(x, y, logA, logB, opt, yy, grad)  debiased divergence S and its parts
//	OT(x, y, logA, logB, opt, grad)              raw entropic OT value (sinkhorn_ot)
//	Plan(x, y, logA, logB, opt, dst)             plan at the final potentials (sinkhorn_plan)
//	SelfTerm(y, logB, opt)                       the y–y problem, once per data set
//	GridDivergence, GridOT, GridSelfTerm         the same on a regular grid (separable path)
//
// Options holds eps, rho, Balanced, Iters, Tol and the gradient mode.
// Result.Iters, Workspace.Iterations (after OT and Plan too) and
// SelfTerm.Iters report the iteration counts of the problems. A non-nil
// *Grad requests gradients: each non-nil slice is overwritten with the
// partial derivative of the returned value (a tape node multiplies by its
// upstream adjoint and accumulates). A *SelfTerm passed to Divergence
// replaces the y–y problem, whose gradient is then not computed (y and
// log_b are data). Resolution gives the median nearest-neighbour distance
// used to choose eps.
//
// Errors are returned, never panicked: eps ≤ 0, iters < 1, rho ≤ 0 in
// unbalanced mode, tol negative, NaN or infinite, tol > 0 with the
// unrolled gradient, lengths that do not match, NaN or +Inf inputs, in
// balanced mode masses that differ by more than 1e-8 relative (the error
// names both masses), and, with tol, a problem that reaches the cap
// (ErrNotConverged).
//
// # Gradients
//
// GradUnrolled differentiates through all iterations. The forward pass keeps
// the potentials of every iteration (memory O(T·(n+m))) and the backward pass
// recomputes the kernel rows from the points, so no n×m matrix is ever
// stored. GradEnvelope differentiates the dual objective at the final
// potentials held fixed (one extra pass over the kernel); it is the only
// gradient of the converged mode, whose number of iterations depends on
// the inputs.
//
// Grad.FixedX and Grad.FixedY mark coordinates of the points whose
// derivatives the caller discards (a column of data beside a simulated
// one, which the sinkhorn built-in finds with autodiff's FixedElements):
// their entries are set to zero, the others keep their bits, and the
// scaling path forms the gradient sums of the other coordinates only
// (one plane of 2-D points instead of two; the backward pass accumulates
// them packed).
//
// # The converged mode
//
// With Options.Tol > 0 the iterations start from zero potentials, as
// above, or, for an x–y problem whose eps is small beside the points'
// spread, from the potentials of an annealing schedule ("Annealing",
// below); the result stays a deterministic function of the inputs. They
// stop after the first iteration whose criterion r is at most Tol,
// Options.Iters being the cap of all of them, the annealing's included
// (and so are the counts of Iterations); an evaluation that reaches the
// cap first returns an error wrapping ErrNotConverged that names the
// problem (x–y, x–x or y–y), Tol, the cap, the annealing's iterations and
// the criterion reached. The criterion compares the potentials (f, g) an
// iteration ends with to those (f_in, g_in) it started from, in units of
// eps:
//
//	balanced:   r = max(osc(f − f_in), osc(g − g_in)) / eps,  osc v = max_i v_i − min_i v_i
//	unbalanced: r = max(max_i |f_i − f_in,i|, max_j |g_j − g_in,j|) / eps
//
// The balanced problem does not change along the shift (f + c, g − c), and
// potentials whose masses differ (by up to the 1e-8 that balanced mode
// accepts) have no fixed point: they drift along it by eps·ln(m_a/m_b) per
// iteration, which the oscillation ignores. Which point of that line the
// iterations reach depends on where they start, and the log-weights'
// envelope gradients, a_i·f_i − eps·(P1)_i, depend on it (by c·a_i and
// −c·b_j, nothing along a change of the weights that keeps the masses
// equal): the converged mode returns the balanced potentials shifted so
// that Σ_i a_i f_i = Σ_j b_j g_j, a point of the fixed line whatever the
// start. Checking costs O(n + m) per iteration. In this mode the scaling
// path does not chain its sweeps (scaling_chain.go), since the criterion
// reads the potentials of every iteration, so the value does not depend on
// whether a gradient is requested, bit for bit; every CPU path (dense,
// sparse, scaling, culled scaling, grid) runs it, package cuda does not.
//
// What it bounds. The value and the plan are those of the final (f, g),
// g the exact update of f, so the plan's column sums are b (balanced) or
// b_j·e^(−g_j/ρ) (unbalanced: the optimality condition) exactly. An update
// moves each potential by no more than the largest move of the other's (τ
// times it, unbalanced), and so each row sum is within a factor e^(±Tol)
// of a_i·m_b/m_a (balanced) or of a_i·e^(−f_i/ρ) (unbalanced): Tol bounds
// every marginal's relative error, point by point (tested on the plans).
//
// The errors of the value and the gradient. The value is F(f), the dual
// maximized over g at f: a concave function, with maximum V* and gradient
// a − P1 (balanced; a·e^(−f/ρ) − P1 unbalanced), whose entries are within
// e^Tol − 1 of the weights. So 0 ≤ V* − V ≤ (e^Tol − 1)·M·‖f* − f‖∞, M the
// plan's mass: the product of Tol and the potentials' distance to the
// fixed point, which near convergence is at most eps·Tol·(K + 1), K =
// −1/ln κ the number of iterations per e-fold decrease of the criterion
// (κ its rate per iteration). The value's error is O(M·eps·(K + 1)·Tol²),
// second order. The envelope gradient is a sum over the plan's entries,
// each off by a factor e^((Δf_i + Δg_j)/eps), so its error is first order:
// at most about 2·(K + 1)·Tol of the sum of its terms' magnitudes. In
// unbalanced mode the iterations contract by τ² at least, so K + 1 ≤
// 1/(1 − τ²), a bound loose for rho ≫ eps. Measured against an
// independent reference converged to rounding (converged_test.go: the
// shared reference vectors, random problems in 1 to 3 dimensions at
// eps = max(h², 0.01) and h², balanced and unbalanced, and grids; every
// path, annealed and from the cold start), at Tol = 1e-6 and 1e-9 the
// gradients are within 0.003–250·Tol of their scale (at most
// 0.65·(K + 1)·Tol), the values within 8% of the bound above (rounding,
// 1e-16 to 1e-14, below), for K from 0.3 to 440: a problem takes about
// 2.3·K iterations more per decade of Tol. A Tol below the potentials'
// rounding, about 1e-16·max|f|/eps, cannot be reached. The reference's
// log-weight gradients are compared less a shift (c·a_i, −c·b_j) of each
// block of a plan that splits into blocks joined only by entries below
// 2^-53 of its mass (pc2d_small_eps_balanced_T80: two, at eps = 0.001):
// such blocks may shift against each other without a change that float64
// sees, the annealed and the cold iterations stop at different shifts,
// and the gradients along them are not determined.
//
// Between iterations two steps remove modes that the plain iterations
// contract slowly, without changing the fixed point. In the symmetric
// problems (x–x, y–y) both potentials become h = (f + g)/2, so that an
// iteration is h ← ½(T(h) + T(T(h))), T the update: at the fixed point
// T's Jacobian is −τΠ, Π a stochastic matrix similar to the Gaussian
// kernel's (positive semi-definite), so each mode of eigenvalue μ ∈ [0, 1]
// is multiplied by ½(τ²μ² − τμ) ∈ [−1/8, 0] per iteration, where the
// plain iterations multiply it by τ²μ², close to 1 when eps is small
// beside the points' spacing and Π close to the identity (measured: 2–15
// iterations from Tol = 1e-4 to 1e-12, where the plain iterations took up
// to 10^6 or stalled). In unbalanced problems (f, g) becomes (f + λ, g − λ), λ =
// (ρ/2)·ln(Σ_i a_i e^(−f_i/ρ) / Σ_j b_j e^(−g_j/ρ)), the maximum of the
// dual along that line (Séjourné et al., "Faster unbalanced optimal
// transport: translation invariant Sinkhorn and 1-D Frank-Wolfe", 2022),
// a direction the plain iterations contract by τ² only (rho = 1e6,
// eps = 0.1: 210 iterations to Tol = 1e-6, where the plain ones had not
// converged after 10^6). The returned (f, g) are those of a plain
// iteration, so the bounds above hold as stated.
//
// Annealing (eps-scaling; anneal.go). From zero potentials the
// iterations at a small eps first spend a transient of the order of
// max C/eps iterations moving the potentials across the cost's range:
// where mass must leave a region they move by about eps·ln(mass ratio)
// per iteration. An x–y problem whose eps is below eps_0/4096, eps_0 the
// squared diagonal of the bounding box of both measures (of the grid),
// therefore starts at eps_0 (Kosowsky and Yuille 1994; Schmitzer 2019;
// GeomLoss's start, Feydy et al. 2019), where the iterations from zero
// converge in one or two, and halves eps per stage down to the target,
// carrying the potentials; each stage iterates until its criterion (r,
// in units of its eps, with its τ and, unbalanced, the same translation
// step) is at most 0.1, or 30 times. The fixed point at the target is
// the one the cold start converges to, so that Tol, the bounds above and
// the envelope gradient mean what they meant, and the schedule depends on
// the inputs only. The stages run on the problem's path, each sweep at
// its stage's eps: the dense, sparse and grid sweeps take eps per sweep,
// the scaling path absorbs a kernel per stage. Stages that end after
// one or two iterations, as GeomLoss's do, leave the potentials behind
// (a stage must move a block of points by about ln(n) units of its eps,
// at ln(mass ratio) per iteration): 1-D, n = 1024, eps = (4h)² reached
// r = 0.1 after 1.2·10^5 iterations with them, against 903 (317
// annealing) with these. Below the ratio 4096 the cold start converges
// in a few hundred iterations and annealing cost as much as it saved, or
// more (2-D, 362 points, one worker: eps_0/eps = 1120, 43 against 19 ms
// at Tol = 1e-3; 280: 20 against 9 ms); the symmetric problems are not
// annealed (their averaged iterations converge in a handful).
//
// What it gains, and what it does not. Counting the annealing's
// iterations, the x–y problem of pc2d_small_eps_balanced_T80 (eps = 0.001,
// eps_0/eps = 3.4·10^4) reaches Tol = 1e-6 in 269 iterations (127
// annealing) against 1.01·10^6 from the cold start; at the paper's
// eps = h² (sparseBenchProblem, h the resolution of y), in 2-D at n = 362
// (eps_0/eps = 10^4) Tol = 1e-3 in 3489 against 6801 (143 against 207 ms),
// in 1-D at n = 120 (eps = (4h)²) in 3298 against 5666, and the random 1-D
// problem of 40 points of converged_test.go Tol = 1e-6 in 6049 against
// 12605. What remains is the iterations at the target: at eps = h² in 1-D
// the plan is a chain of blocks of points joined by entries small as
// e^(−gap²/eps), a block whose masses differ by a ratio μ moves by
// eps·ln μ per iteration until the flow through its weak links balances
// it, and the criterion then decreases slowly, about as 1/t, annealed or
// not (1-D, n = 120, eps = h²: r = 0.1 after 126 iterations against 6297
// from the cold start, 1e-2 after 2723 against 16 410, 1e-3 after 20 158
// against 58 932, 1e-4 after more than 2·10^5 against 3.4·10^5). At
// n = 1024 and eps = h² the annealed problem reaches r = 0.1 after 6549
// iterations (437 annealing; the cold start not after 2·10^5), r = 1e-2
// not within 2·10^5, so that Tol = 1e-6 stays out of reach of the default
// cap (10 000): a converged evaluation there costs far more than the 80
// iterations of the paper's fixed budget. BenchmarkConverged (one worker,
// a divergence with its gradient, the y–y term cached): at n = 1024 and
// eps = h² on the scaling path T = 80 takes 36 ms (unrolled gradient) or
// 9 ms (envelope), Tol = 1e-6 reaches the cap after 0.50 s annealed and
// 0.75 s from the cold start; on the sparse path 1.6 s against 1.1 s (its
// 437 annealing iterations, near dense at the first stages, cost more than
// its target iterations save), and in 2-D at n = 362 and eps = h² the cap
// costs 5% more annealed (270 against 255 ms), where Tol = 1e-3 takes 104
// against 160 ms. Annealing costs the most where the cold start cannot
// converge either.
//
// # Performance and determinism
//
// A Workspace owns every buffer; after the first evaluation at given sizes,
// later evaluations allocate nothing. Each log-sum-exp row is computed with a
// fast exponential (at most 2 ulps from math.Exp, see fastExp) in two passes
// (arguments and maximum, then the shifted sum with four accumulators).
// In the AVX2 forward sum, groups of four terms below e^-50 of the row's
// maximum are skipped, which provably changes the sum by less than half an
// ulp (rows of at most 2^19 terms; see pruneBelow).
// Large problems are split across goroutines by blocks of rows (on the
// sparse path, blocks of row leaves from 4096 rows). The block partition
// depends only on the problem size, every row is computed by one
// goroutine, and column sums are reduced over blocks in a fixed order, so
// results are bitwise identical whatever the number of workers.
//
// On amd64 the row kernels are AVX2 + FMA assembly (kernels_amd64.s,
// generated by gen_asm.py), chosen at run time from CPUID; elsewhere, or
// with the build tag purego, the pure-Go kernels run. The pure-Go kernels are
// the reference: the tests run every reference vector on both.
//
// # The sparse path
//
// At the paper's eps = (alpha·h)², h the median nearest-neighbour distance,
// a log-sum-exp row is dominated by the few terms near its maximum. By
// default (PathAuto, Workspace.SetPath) a problem on scattered points of at
// least 32 points a side runs on the sparse sweeps (sparse.go): both
// measures are put in k-d tree order (kdtree.go; sorted in 1-D), and for
// each row block of the rows' tree (a leaf in 1-D, the parent of two
// leaves of at most 8 points in higher dimension) the column tree is
// descended, dropping a node when an upper bound of its terms over the
// block's rows lies below the rows' reference less thr = ln(m) + 54·ln 2.
// The bound follows the potentials: the column terms u_j·eps are written
// as an affine function of the points (a least-squares slope per leaf)
// plus a residual bounded per node, and the maximum of slope·y − |x − y|²
// over the two boxes is taken in closed form. A dropped term is below e^(−thr) times its row's largest
// term (forward) or total weight (backward), so the dropped terms of a row
// add up to less than 2^-54 of its sum: the sparse and dense paths agree to
// rounding (tested to 1e-12 relative, values and both gradient modes), and
// each adjoint accumulated by a backward sweep is within 2^-54 of the same
// sum taken with absolute values (tested with small thresholds). The
// forward sweeps record each row's span of surviving terms, so that the
// backward sweeps over the same terms need no bounds (records are bounded
// at 16 MiB; beyond it the backward culls again). The orderings are
// internal: inputs and outputs keep the caller's order, and the tree of a
// measure that does not change (y) is cached. PathAuto evaluates a sweep
// densely when more than 70% of its terms survive the culling; PathDense
// is the reference and PathSparse forces the sparse sweeps
// (SHM_SINKHORN_PATH in package sinkhorn). The leaf kernels for d = 1 and
// 2 are AVX2 assembly (lse1LeafAVX2, exp1LeafAVX2, ...); other dimensions
// use the row kernels. The forward ones pack the terms above the
// threshold (values and indices) before their exponentials, the backward
// ones list the groups of four with a kept term first, so that neither
// branches on the data per group.
//
// # The scaling path
//
// Problems of at least 32 points a side run, by default, on the scaling
// path (scaling.go; PathScaling forces it), which avoids most
// exponentials; of the unrolled problems beyond the sizes below (2^22
// point pairs, 2^19 in 1-D), those in 1-D and 2-D and those whose history
// would exceed 32 MiB stay on the sparse sweeps. After a log-domain sweep
// the kernel is absorbed into the potentials: with row and column offsets
// A_i, B_j (log units) from the potentials just computed, K_ij = e^(A_i + B_j − C_ij/eps) is stored in compressed rows
// (and transposed), keeping an entry when it lies within L = ln(max(n, m))
// + 54·ln 2 + margin of its row's or its column's largest term. The margin
// is the drift the kernel absorbs: 28, or 55 for a problem whose first
// absorption finds that the wider margin keeps at most 1.35 times as many
// terms (points along a curve, or in 1-D: such kernels grow slowly with
// L, and absorbing less often pays for the extra entries); every kernel
// records its L for its exactness test. Later sweeps
// are sparse products LSE_i = −A_i + H + log Σ_j K_ij e^(h_j − H), h_j =
// u_j − B_j. A sweep is accepted only when, for every row, the dropped
// entries provably add up to less than 2^-54 of the row's sum, whatever the
// potentials' drift since absorption (a bound from each row's largest kept
// term, the largest drift of the column factors and the computed sum);
// otherwise it is computed densely and a new kernel absorbed. At the paper's
// eps a problem needs a handful of absorptions in 160 sweeps and keeps 5–15%
// of the pairs. The unrolled backward pass reuses each sweep's kernel and
// divides each row's weights by the row sum of its forward sweep, so the
// softmax it differentiates is normalized exactly; the dense path
// normalizes with the stored potentials, whose rounding (u times their size
// in units of eps) limits its gradients to about 1e-11 relative on
// Experiment A's scale and 1e-10 on steep problems. Against a double-double
// reference (ddref_test.go, itself checked against the 80-bit vectors of
// shared/testdata) the scaling path's gradients are within 3e-14 of their
// scale on every test problem where the dense path's are within 1e-10;
// values agree with the dense path to 1e-12. The envelope gradient is
// computed by the sparse sweeps at the final potentials. With AVX2 and FMA
// the products (one pass over a kernel's entries for one to three vectors
// of sums at once, written and scaled where the sweep wants them) and the
// absorption's two passes over the pairs run in assembly kernels
// (kernels_amd64.s, generated by gen_asm.py), as do the sweeps' per-row
// and per-column work (column factors and their drift, the exactness test
// and the new potentials, the backward ratios and accumulations); the
// backward pass reuses each forward sweep's column factors, and the
// forward sweeps whose rows want a gradient form the row gradient sums
// Σ_j K_ij e^(h_j − H)(x_i − y_j) in the same pass as the row sums, from
// the entries times their points' differences, formed once per kernel.
// In balanced problems consecutive kernel sweeps on one kernel chain
// (scaling_chain.go): a sweep's column factors are the previous sweep's
// weights over its row sums, (w_c/σ_c)/max_k(w_k/σ_k), its exactness test
// compares the row sums with per-kernel thresholds, and its potentials are
// formed only when read (the input of a sweep that does not chain, the
// last of each orientation): no logarithm or exponential per point.
// Chained potentials are closer to the double-double reference than
// those formed sweep by sweep (half the error on the steep case), but
// their rounding errors do not lie along the shift (f + c, g − c) that the
// envelope gradient ignores, so solves for an envelope gradient do not
// chain; values therefore agree across gradient modes to rounding, not
// bit for bit.
// In 2-D and above, problems of at most 2^18 pairs compute the sweeps that
// absorb densely (scalingDenseAbsorb), within the absorption's first pass
// (the same bits as a dense sweep), and keep the absorption's arguments
// between its two passes.
// The products of large kernels split their rows across the workspace's
// goroutines (each row's sums are the same whatever the split).
//
// Absorbing scans every pair twice, which beyond 2^22 pairs (2^19 in 1-D)
// costs more than it saves; larger problems absorb from the sparse sweeps'
// culling at the threshold L instead (scaling_cull.go). Their kernels keep
// the row criterion only, so each orientation has its own, and they are
// neither transposed nor kept for the backward pass: a backward sweep
// absorbs its kernel again from the stored potentials of the forward sweep
// that absorbed it (a deterministic function of them, checked by a
// checksum) and forms its row gradients and column sums in one pass over
// the rows. At 10^5 points in 2-D such a kernel holds about 60 entries per
// row, 72 MB.
//
// The forward sparse sweeps of an orientation reuse their last culling
// while the column terms' drift since it stays within a slack the culling
// left (sparse.go, candCache), and the backward sweeps share the candidates
// of such runs of sweeps.
//
// Points on a regular h×w grid with unit spacing can use the separable path
// (GridDivergence, GridOT), which computes each half-iteration as two 1-D
// log-sum-exp passes, O(h·w·(h+w)) instead of O((h·w)²). When the kernel
// e^(−δ²/eps) stays a normal number across a line ((max(h, w) − 1)²/eps ≤
// 600: up to 25×25 at eps = 1) a pass shifts each line by its maximum,
// exponentiates it once and multiplies it by the kernel's Toeplitz matrix:
// h·w exponentials and logarithms per pass instead of h·w·(h+w)
// exponentials, with the same accuracy (the shifted sums cannot underflow).
package ot
