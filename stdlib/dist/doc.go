// Package dist implements shm's distributions on the autodiff tape: for
// every family of the signature table (package stdlib) its log density
// (_lpdf/_lpmf and _lupdf/_lupmf), where the table has them its _cdf,
// _lcdf and _lccdf, and its _rng. Register adds them to a stdlib.Impls.
//
// # Vectorization
//
// A univariate density takes each argument as a scalar (int or real) or a
// container (vector, row_vector, array[] int, array[] real); containers
// must have equal lengths and scalars are broadcast over them, as in Stan.
// The result is the sum of the elementwise log densities (the product of
// the cdfs for _cdf), recorded as ONE tape node (ScalarPartials) with one
// partial per element of every non-constant argument: O(N) forward and
// backward. Ints and constants get no partials. An empty container gives
// 0 (1 for _cdf). A _rng given any container argument returns a vector of
// draws (continuous) or an array of ints (discrete); draws are constants.
// std_normal_rng(n) and uniform_rng(n) return vector[n] (shm extensions).
//
// # Reparameterized draws
//
// Inside crn(...) the runtime sets Context.Noise, and the _rng of every
// family marked reparameterizable in the signature table (Family.Reparam)
// draws on the tape as a differentiable function of its parameters and of
// standard noise from the replicate's stream (reparam.go: mu + sigma·z,
// a + (b − a)·u, mu + L·z for multi_normal with L its Cholesky factor on
// the tape, ...), after the same argument checks as any draw. The
// other families draw plain numbers from Context.RNG.
//
// # Dropping constants
//
// _lupdf/_lupmf, and _lpdf/_lpmf when Context.Propto is set (as the runtime
// does for ~), drop every additive term whose arguments are all constant,
// as Stan's include_summand: a call whose arguments are all constant
// returns 0. The terms, with the arguments each depends on:
//
//	normal(y|mu,sigma)       -½z² [y,mu,sigma]  -log σ [sigma]  -½log 2π []
//	std_normal(y)            -½y² [y]  -½log 2π []
//	student_t(y|nu,mu,sigma) lgamma((ν+1)/2)-lgamma(ν/2)-½log ν [nu]  -½log π []
//	                         -log σ [sigma]  -(ν+1)/2 log1p(z²/ν) [all]
//	cauchy(y|mu,sigma)       -log π []  -log σ [sigma]  -log1p(z²) [all]
//	double_exponential       -log 2 []  -log σ [sigma]  -|y-μ|/σ [all]
//	logistic                 -z-2log1p(e^-z) [all]  -log σ [sigma]
//	lognormal                -½log 2π []  -log σ [sigma]  -log y [y]  -½z² [all]
//	exponential(y|beta)      log β [beta]  -βy [y,beta]
//	gamma(y|alpha,beta)      -lgamma α [alpha]  α log β [alpha,beta]
//	                         (α-1)log y [y,alpha]  -βy [y,beta]
//	inv_gamma(y|alpha,beta)  -lgamma α [alpha]  α log β [alpha,beta]
//	                         -(α+1)log y [y,alpha]  -β/y [y,beta]
//	weibull(y|alpha,sigma)   log α [alpha]  (α-1)log y [y,alpha]
//	                         -α log σ [alpha,sigma]  -(y/σ)^α [all]
//	beta(y|alpha,beta)       lgamma(α+β) [alpha,beta]  -lgamma α [alpha]  -lgamma β [beta]
//	                         (α-1)log y [y,alpha]  (β-1)log(1-y) [y,beta]
//	uniform(y|alpha,beta)    -log(β-α) [alpha,beta]
//	chi_square(y|nu)         -ν/2 log 2 - lgamma(ν/2) [nu]  (ν/2-1)log y [y,nu]  -y/2 [y]
//	half_normal(y|sigma)     ½log(2/π) []  -log σ [sigma]  -½(y/σ)² [y,sigma]
//	bernoulli(_logit)        everything [theta or alpha]
//	binomial(_logit)         lchoose(N,n) []  the rest [theta or alpha]
//	poisson(n|lambda)        n log λ - λ [lambda]  -lgamma(n+1) []
//	poisson_log(n|alpha)     nα - e^α [alpha]  -lgamma(n+1) []
//	neg_binomial_2(n|mu,phi) lgamma(n+φ)-lgamma φ [phi]  -lgamma(n+1) []  n log μ [mu]
//	                         φ log φ - (n+φ)log(μ+φ) [mu,phi]
//	neg_binomial_2_log       as neg_binomial_2 with μ = e^η, n η [eta]
//	categorical(y|theta)     everything [theta]
//	multi_normal(_cholesky)  -½ rᵀΣ⁻¹r [all]  -½log|Σ| [Sigma or L]  -K/2 log 2π []
//	dirichlet(theta|alpha)   lgamma(Σα) - Σ lgamma α [alpha]  Σ(α-1)log θ [theta,alpha]
//	lkj_corr_cholesky(L|eta) log normalizing constant [eta]  Σ (K-k+2η-2) log L_kk [L,eta]
//
// # Domain errors and support
//
// Invalid parameters are errors naming the function, the argument and the
// (1-based) element, such as "normal_lpdf: scale sigma[3] = -1 must be
// positive"; so are mismatched container lengths. Outcomes follow Stan's
// math library: an error where Stan checks the outcome (exponential,
// lognormal and chi_square need y ≥ 0, beta y in [0, 1], bernoulli n in
// {0, 1}, binomial 0 ≤ n ≤ N, the other discrete families n ≥ 0,
// categorical y in 1:K, dirichlet a simplex; y must be finite for
// double_exponential, logistic and weibull and not NaN elsewhere), and a
// log density of -Inf
// (with zero partials) where Stan returns LOG_ZERO: uniform outside
// [alpha, beta], gamma and weibull for y < 0, inv_gamma for y ≤ 0,
// lognormal at y = 0, and half_normal (shm) for y < 0. The cdfs accept the
// same outcomes and give 0 or 1 outside the support.
//
// # Cdfs
//
// _lcdf and _lccdf sum log P(Y ≤ y) and log P(Y > y) over the elements;
// _cdf is the product of the cdfs. Their gradients cover every real
// argument, the outcome included (for truncation). Derivatives of the
// regularized incomplete beta and gamma functions with respect to their
// shape parameters (student_t in nu, beta, gamma, inv_gamma, chi_square)
// are summed term by term from the hypergeometric series of the
// incomplete beta function and the power series of the incomplete gamma
// function; where a series would cancel badly (beta with both shapes above
// 15, a gamma-type upper tail below 1e-8) they fall back to
// Richardson-extrapolated central differences of gonum's mathext values.
// neg_binomial_2's cdf sums the pmf up to n = 1000 and uses the
// incomplete beta function above.
package dist
