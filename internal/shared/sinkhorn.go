package shared

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// SinkhornRef is one reference vector of shared/testdata/sinkhorn (format
// in that folder's README).
type SinkhornRef struct {
	Name   string `json:"name"`
	Inputs struct {
		X        [][]float64 `json:"x"`
		Y        [][]float64 `json:"y"`
		LogA     []float64   `json:"log_a"`
		LogB     []float64   `json:"log_b"`
		Eps      float64     `json:"eps"`
		Rho      *float64    `json:"rho"` // nil exactly when Balanced
		T        int         `json:"T"`
		Balanced bool        `json:"balanced"`
	} `json:"inputs"`
	Expected struct {
		OTxy             float64     `json:"ot_xy"`
		OTxx             float64     `json:"ot_xx"`
		OTyy             float64     `json:"ot_yy"`
		MassA            float64     `json:"mass_a"`
		MassB            float64     `json:"mass_b"`
		Divergence       float64     `json:"divergence"`
		GradX            [][]float64 `json:"grad_x"`
		GradY            [][]float64 `json:"grad_y"`
		GradLogA         []float64   `json:"grad_log_a"`
		GradLogB         []float64   `json:"grad_log_b"`
		EnvelopeGradX    [][]float64 `json:"envelope_grad_x"`
		EnvelopeGradLogA []float64   `json:"envelope_grad_log_a"`
		OTxyGradX        [][]float64 `json:"ot_xy_grad_x"`
		OTxyGradLogA     []float64   `json:"ot_xy_grad_log_a"`
		Fxy              []float64   `json:"f_xy"`
		Gxy              []float64   `json:"g_xy"`
		PlanXY           [][]float64 `json:"plan_xy"`
	} `json:"expected"`
	Tolerance struct {
		ValueRtol  float64 `json:"value_rtol"`
		ValueScale float64 `json:"value_scale"`
		GradRtol   float64 `json:"grad_rtol"`
	} `json:"tolerance"`
}

// SinkhornRefs reads every reference vector of shared/testdata/sinkhorn,
// failing t if there are none.
func SinkhornRefs(t testing.TB) []*SinkhornRef {
	t.Helper()
	dir := Path(t, "testdata", "sinkhorn")
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("shared: no JSON files in %s", dir)
	}
	refs := make([]*SinkhornRef, 0, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		r := new(SinkhornRef)
		if err := json.Unmarshal(data, r); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		refs = append(refs, r)
	}
	return refs
}

// Flatten concatenates the rows of a: points as a row-major n×d slice.
func Flatten(a [][]float64) []float64 {
	var out []float64
	for _, row := range a {
		out = append(out, row...)
	}
	return out
}
