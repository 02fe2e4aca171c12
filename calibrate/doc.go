// Package calibrate implements the paper's procedures for choosing the
// loss scale lambda of a generalized-Bayes posterior (Syring & Martin
// 2019): the frequentist coverage of a known truth, or of an estimate with
// bootstrap datasets, by the posterior's highest-density or Gaussian
// credible region, and a search over lambda for the highest loss scale
// whose coverage reaches a target.
//
// A calibration is a set of tasks, one posterior per (lambda, dataset).
// Each task's result is a file in the calibration's folder, so that a
// calibration can be interrupted and resumed, and its runs can go to a
// worker pool or to Slurm job arrays; a task's result depends only on the
// plan and on the results of the rounds before its own, never on the
// scheduling.
//
// The runs of one calibration are close relatives, and the fast path
// (Plan.Reuse) uses that: a run keeps its draws (Draws), a task is decided
// by Pareto-smoothed importance reweighting of a run of its dataset at
// another scale when the weights can be trusted (Reweight), and runs
// start warm from the adaptation and last point of the nearest run
// (RunTask). Without Plan.Reuse every task is a run from nothing, the
// reference the fast path is tested against.
package calibrate
