// Command gen writes the data sets of the paper's experiments B, C and D
// (shared/paper/, "Empirical Study and Results") with a fixed seed, so
// that the shipped models in models/ run on reproducible data.
//
// Usage:
//
//	go run ./models/gen expB --seed 1 --out DIR
//	go run ./models/gen expC --seed 1 --out DIR [--jitter 0.05]
//	go run ./models/gen expD --seed 1 --out DIR [--cifar ../shared/cifar10/images.bin] [--first 0 --count 64]
//	go run ./models/gen expD-eval --truth DIR/truth.csv RUNDIR...
//	go run ./models/gen expD-sweep CALIBRATIONDIR...
//
// expB writes DIR/data.csv: the noisy spiral (N = 160, c0* = 0.30,
// kappa* = 0.15, sigma* = 0.08, turns = 3), columns y.1, y.2.
//
// expC writes DIR/data.csv: the Gaussian pulse with timing jitter
// (N = 128, baseline* = 0, amp* = 1, t0* = 0.5, width* = 0.05,
// sigma* = 0.02, jitter scale 0.05), columns t, y. --jitter 0 gives the
// jitter-free data of the paper's sanity check of the likelihood model.
//
// expD writes, for each chosen CIFAR-10 test image, DIR/img<index>.json
// (array[3] matrix[32, 32] img with values in [0, 1], and array[3]
// matrix[16, 16] obs: the window at the true offset, blurred), and
// DIR/truth.csv with the true offsets. Offsets are drawn per image from
// a stream seeded by (seed, index), so an image's offset does not depend
// on which other images are generated.
//
// expD-eval reads the Stan CSV files of runs of expD_*.shm (one folder
// per image, named img<index>) and prints the paper's Experiment D
// metrics: Gaussian 95% ellipse coverage, median and P90 error of the
// posterior median, the share of errors above 4 pixels, the median area
// of the 90% ellipse and the divergence rate.
//
// expD-sweep reads the folders of `shm calibrate lambda` runs of the loss
// scale sweep (runs.csv and plan.json, one folder per regime) and prints,
// per loss scale, the ellipse coverage with its standard error, the
// median and P90 distance of the posterior mean from the truth, the share
// above 4 pixels and the share of runs with a divergence.
package main
