package nuts

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// MetricKind selects the form of the Euclidean metric.
type MetricKind int

const (
	// Diag is a diagonal inverse metric (Stan's diag_e, the default).
	Diag MetricKind = iota
	// Dense is a full inverse metric (Stan's dense_e).
	Dense
)

// String returns the name used in Stan CSV headers ("diag_e" or "dense_e").
func (k MetricKind) String() string {
	switch k {
	case Diag:
		return "diag_e"
	case Dense:
		return "dense_e"
	}
	return fmt.Sprintf("MetricKind(%d)", int(k))
}

// metric is the kinetic energy tau(p) = p'·A·p/2 with A the inverse metric.
type metric struct {
	kind MetricKind
	d    int
	inv  []float64 // diag: d entries; dense: d*d row-major
	// diag: 1/sqrt(inv); dense: lower Cholesky factor of inv (row-major)
	factor []float64
}

func newMetric(kind MetricKind, d int, inv []float64) (*metric, error) {
	m := &metric{kind: kind, d: d}
	switch kind {
	case Diag:
		m.inv = make([]float64, d)
		m.factor = make([]float64, d)
	case Dense:
		m.inv = make([]float64, d*d)
		m.factor = make([]float64, d*d)
	default:
		return nil, fmt.Errorf("nuts: unknown metric kind %d", int(kind))
	}
	if inv == nil {
		if kind == Diag {
			for i := range m.inv {
				m.inv[i] = 1
			}
		} else {
			for i := 0; i < d; i++ {
				m.inv[i*d+i] = 1
			}
		}
	} else {
		if len(inv) != len(m.inv) {
			return nil, fmt.Errorf("nuts: inverse metric has %d entries, want %d for a %s metric of dimension %d", len(inv), len(m.inv), kind, d)
		}
		copy(m.inv, inv)
	}
	if err := m.refactor(); err != nil {
		return nil, fmt.Errorf("nuts: %w", err)
	}
	return m, nil
}

// refactor recomputes the factor after m.inv changed.
func (m *metric) refactor() error {
	d := m.d
	if m.kind == Diag {
		for i, v := range m.inv {
			if !(v > 0) || math.IsInf(v, 0) {
				return fmt.Errorf("diagonal inverse metric element %d is %g, must be positive and finite", i+1, v)
			}
			m.factor[i] = 1 / math.Sqrt(v)
		}
		return nil
	}
	a, l := m.inv, m.factor
	for i := range l {
		l[i] = 0
	}
	for j := 0; j < d; j++ {
		s := a[j*d+j]
		for k := 0; k < j; k++ {
			s -= l[j*d+k] * l[j*d+k]
		}
		if !(s > 0) || math.IsInf(s, 0) {
			return fmt.Errorf("dense inverse metric is not positive definite (pivot %d is %g)", j, s)
		}
		ljj := math.Sqrt(s)
		l[j*d+j] = ljj
		for i := j + 1; i < d; i++ {
			s := a[i*d+j]
			for k := 0; k < j; k++ {
				s -= l[i*d+k] * l[j*d+k]
			}
			l[i*d+j] = s / ljj
		}
	}
	return nil
}

// sampleP draws p ~ N(0, A^{-1}).
func (m *metric) sampleP(rng *rand.Rand, p []float64) {
	if m.kind == Diag {
		for i := range p {
			p[i] = rng.NormFloat64() * m.factor[i]
		}
		return
	}
	// A = L·L'; p = L'^{-1}·u has covariance (L·L')^{-1}.
	d := m.d
	for i := range p {
		p[i] = rng.NormFloat64()
	}
	l := m.factor
	for i := d - 1; i >= 0; i-- {
		s := p[i]
		for k := i + 1; k < d; k++ {
			s -= l[k*d+i] * p[k]
		}
		p[i] = s / l[i*d+i]
	}
}

// dtauDp writes A·p into out.
func (m *metric) dtauDp(p, out []float64) {
	if m.kind == Diag {
		for i, v := range m.inv {
			out[i] = v * p[i]
		}
		return
	}
	d := m.d
	for i := 0; i < d; i++ {
		row := m.inv[i*d : (i+1)*d]
		s := 0.0
		for k, v := range row {
			s += v * p[k]
		}
		out[i] = s
	}
}

// tau returns p'·A·p/2.
func (m *metric) tau(p []float64) float64 {
	s := 0.0
	if m.kind == Diag {
		for i, v := range m.inv {
			s += v * p[i] * p[i]
		}
		return 0.5 * s
	}
	d := m.d
	for i := 0; i < d; i++ {
		row := m.inv[i*d : (i+1)*d]
		t := 0.0
		for k, v := range row {
			t += v * p[k]
		}
		s += p[i] * t
	}
	return 0.5 * s
}
