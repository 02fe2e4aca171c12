// Package stancsv writes and reads Stan CSV files in the layout CmdStan 2.32
// writes: a "#" comment header with the run's configuration, the column
// names (Stan's sampler columns lp__, accept_stat__, stepsize__,
// treedepth__, n_leapfrog__, divergent__, energy__, then the model's
// quantities), the adaptation results, one row per draw and the elapsed
// times at the end. Values are printed as C++ streams print them with
// std::setprecision(sig_figs): %g-style with 6 significant digits by default.
//
// A [Writer] writes under a temporary name in the destination directory and
// renames the file into place only when it is complete; an aborted file is
// removed. [Read] parses files written by this package or by CmdStan.
package stancsv
