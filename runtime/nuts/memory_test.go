package nuts

import (
	"strings"
	"testing"
)

// TestCheckMemory: a chain's memory (its vectors, the dense metric's d×d
// matrices, the draws Sample keeps) is checked against Config.MaxMemory
// before anything is allocated, and the error says how many parameters
// fit; NewChain and Sample refuse such a target.
func TestCheckMemory(t *testing.T) {
	const limit = 1 << 20 // words: 8 MiB
	diag, dense := DefaultConfig(), DefaultConfig()
	dense.Metric = Dense
	for _, tc := range []struct {
		name string
		cfg  Config
		d    int
		keep bool
		want string // "" when it fits
	}{
		{"diag fits", diag, 1000, false, ""},
		{"diag too many", diag, 100000, false, "nuts: 100000 parameters need 107 MiB per chain (the trajectory's and the tree's vectors), more than the 8.0 MiB a chain may hold"},
		{"diag: how many fit", diag, 100000, false, "at most 7489 parameters fit here"},
		{"dense fits", dense, 300, false, ""},
		{"dense too many", dense, 1000, false, "nuts: 1000 parameters with the dense metric need 31.6 MiB per chain (1000×1000 matrices"},
		{"dense: how many fit", dense, 1000, false, "the dense metric allows at most 495 parameters here; use the diagonal metric"},
		{"draws kept", diag, 1000, true, "and the draws kept"},
		{"no draws kept", diag, 1000, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.MaxMemory = limit
			err := tc.cfg.CheckMemory(tc.d, tc.keep)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if tc.want != "" && !tc.keep {
				if _, err := NewChain(dimOnly(tc.d), tc.cfg, 1, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("NewChain: error %v, want %q", err, tc.want)
				}
			}
		})
	}
}

// dimOnly is a target of dimension d that is never evaluated.
type dimOnly int

func (d dimOnly) Dim() int { return int(d) }
func (d dimOnly) LogDensityGrad(q, g []float64) (float64, error) {
	panic("not evaluated")
}
