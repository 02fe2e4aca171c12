// Package diag computes convergence diagnostics of Markov chains: the
// rank-normalized split R-hat, bulk and tail effective sample sizes, Monte
// Carlo standard errors of the mean, the standard deviation and quantiles
// (Vehtari, Gelman, Simpson, Carpenter and Bürkner 2021, "Rank-normalization,
// folding, and localization: an improved R-hat for assessing convergence of
// MCMC", as implemented by the R package posterior), E-BFMI, and counts of
// divergences and tree-depth saturations, and writes a stansummary-style
// table.
//
// Draws of one quantity are passed as chains[c][i]: chain c, iteration i.
// Chains of unequal length are cut to the shortest. Functions that cannot
// give a value (fewer than 3 draws per split chain, non-finite or constant
// draws) return NaN, as posterior returns NA.
package diag
