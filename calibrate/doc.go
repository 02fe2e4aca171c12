// Package calibrate implements the paper's procedures for choosing the
// loss scale lambda of a generalized-Bayes posterior (Syring & Martin
// 2019): the frequentist coverage of a known truth, or of an estimate with
// bootstrap datasets, by the posterior's highest-density or Gaussian
// credible region, and a search over lambda for the highest loss scale
// whose coverage reaches a target.
//
// A calibration is a set of independent tasks, one posterior per (lambda,
// dataset). Each task's result is a file in the calibration's folder, so
// that a calibration can be interrupted and resumed, and its tasks can run
// on a worker pool or as a Slurm job array; a task's result depends only
// on the plan, its lambda and its dataset, never on the scheduling.
package calibrate
