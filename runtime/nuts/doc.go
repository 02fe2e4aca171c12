// Package nuts implements the No-U-Turn sampler as Stan runs it
// (stan::mcmc::base_nuts with Stan's warmup), for any [Target].
//
// A transition draws a momentum, then doubles a trajectory in random
// directions until the generalized no-U-turn criterion fails (checked on the
// whole trajectory and, as Stan has done since 2020, also across the boundaries of the
// two subtrees at every merge), a subtree becomes divergent (energy error
// above 1000 or a non-finite density), or the maximum tree depth is reached.
// The next state is drawn by multinomial sampling: uniformly (by weight)
// within each new subtree and with a bias toward the new subtree when it is
// merged into the old trajectory.
//
// Warmup follows Stan: the initial step size heuristic, dual averaging of the
// step size (delta 0.8, gamma 0.05, kappa 0.75, t0 10), and windowed
// adaptation of a diagonal or dense inverse metric (initial buffer 75,
// slow windows doubling from 25, terminal buffer 50), with the metric
// regularized toward 1e-3 times the identity and the step size re-initialized
// after every metric update.
//
// A chain is a deterministic function of the target, the [Config], the seed
// and the chain id: its random numbers come from a PCG generator seeded with
// (seed, chain id).
//
// Use [NewChain] and [Chain.Run] to stream draws (for example into a Stan CSV
// writer) with [Callbacks], or [Sample] to keep a whole chain in memory.
//
// Differences from Stan:
//   - the random numbers differ (PCG instead of boost's ecuyer1988), so draws
//     are not those of CmdStan for the same seed;
//   - when the warmup is too short for the configured buffers (fewer than
//     init_buffer + window + term_buffer iterations), Stan 2.32 reduces them
//     to 15%/75%/10% but, by our reading of its windowed_adaptation.hpp,
//     never ends the single slow window (set_window_params does not restart
//     the schedule in that case), so the metric is not adapted; here the
//     reduced schedule is restarted and the metric is adapted once, as Stan's
//     documentation describes;
//   - without adaptation (Config.NoAdapt) warmup iterations are still run;
//     CmdStan refuses adaptation with zero warmup, here it is simply skipped;
//   - there is no step size jitter.
//
// As in Stan, the dual averaging target mu is log(10·ε) with ε the initial
// step size given in the configuration (1 by default), not the one found by
// the step size heuristic; after every metric update it becomes log(10·ε)
// with the step size the heuristic just found.
package nuts
