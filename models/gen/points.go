package main

import (
	"math"
	"math/rand/v2"
)

// Stream identifiers: each data set draws from its own PCG stream, so
// the seeds of different experiments never share random numbers.
const (
	streamSpiral = 0xb0 + iota
	streamPulse
	streamWindow
	streamGandK
)

// spiralSettings are the settings of Experiment B.
type spiralSettings struct {
	N                       int
	C0, Kappa, Sigma, Turns float64
}

// defaultSpiral is the paper's Experiment B.
var defaultSpiral = spiralSettings{N: 160, C0: 0.30, Kappa: 0.15, Sigma: 0.08, Turns: 3}

// spiral draws Experiment B's noisy spiral: latent t_i ~ U(0, 1),
// phi_i = 2 pi turns t_i, c_i = c0 + kappa phi_i and
// y_i = c_i (cos phi_i, sin phi_i) + sigma z_i with z_i ~ N(0, I_2).
// It returns the two coordinate columns.
func spiral(s spiralSettings, seed uint64) [2][]float64 {
	rng := rand.New(rand.NewPCG(seed, streamSpiral))
	var y [2][]float64
	y[0], y[1] = make([]float64, s.N), make([]float64, s.N)
	for i := range s.N {
		t := rng.Float64()
		phi := 2 * math.Pi * s.Turns * t
		c := s.C0 + s.Kappa*phi
		y[0][i] = c*math.Cos(phi) + s.Sigma*rng.NormFloat64()
		y[1][i] = c*math.Sin(phi) + s.Sigma*rng.NormFloat64()
	}
	return y
}

// pulseSettings are the settings of Experiment C.
type pulseSettings struct {
	N                               int
	Baseline, Amp, T0, Width, Sigma float64
	Jitter                          float64
}

// defaultPulse is the paper's Experiment C. The paper does not state N;
// 128 matches the spread of its likelihood posterior (sd(sigma) ≈
// sigma/sqrt(2N) gives N ≈ 127).
var defaultPulse = pulseSettings{N: 128, Baseline: 0, Amp: 1, T0: 0.5, Width: 0.05, Sigma: 0.02, Jitter: 0.05}

// pulseAt is the Gaussian pulse f(u) = baseline + amp exp(-((u-t0)/width)^2/2).
func (s pulseSettings) pulseAt(u float64) float64 {
	d := (u - s.T0) / s.Width
	return s.Baseline + s.Amp*math.Exp(-0.5*d*d)
}

// pulse draws Experiment C's observations on the latent grid
// u_i = (i-1)/(N-1): t_i = u_i + jitter xi_i and y_i = f(u_i) + sigma
// zeta_i, with xi, zeta standard normal. It returns t and y.
func pulse(s pulseSettings, seed uint64) (t, y []float64) {
	rng := rand.New(rand.NewPCG(seed, streamPulse))
	t, y = make([]float64, s.N), make([]float64, s.N)
	for i := range s.N {
		u := float64(i) / float64(s.N-1)
		t[i] = u + s.Jitter*rng.NormFloat64()
		y[i] = s.pulseAt(u) + s.Sigma*rng.NormFloat64()
	}
	return t, y
}

// gandkSettings are the settings of the g-and-k example (docs/sinkhorn.md).
type gandkSettings struct {
	N          int
	A, B, G, K float64
}

// defaultGandK is the classic test case of approximate Bayesian
// computation (Prangle 2017: A = 3, B = 1, g = 2, k = 0.5).
var defaultGandK = gandkSettings{N: 100, A: 3, B: 1, G: 2, K: 0.5}

// gandk draws N values of the g-and-k distribution by its quantile
// function at standard normal z: A + B (1 + 0.8 tanh(g z / 2)) (1 + z²)^k z.
func gandk(s gandkSettings, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, streamGandK))
	y := make([]float64, s.N)
	for i := range y {
		z := rng.NormFloat64()
		y[i] = s.A + s.B*(1+0.8*math.Tanh(s.G*z/2))*math.Pow(1+z*z, s.K)*z
	}
	return y
}
