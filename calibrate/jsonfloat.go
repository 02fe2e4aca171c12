package calibrate

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// jsonFloat is a float64 that JSON can hold whatever its value: a number
// when finite, else the string "NaN", "Inf" or "-Inf" (as CmdStan's JSON
// data). A run's R-hat is NaN when its chains are too short, the log
// density at a truth outside the support −Inf.
type jsonFloat float64

func (x jsonFloat) MarshalJSON() ([]byte, error) {
	f := float64(x)
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"Inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Inf"`), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

func (x *jsonFloat) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		switch s {
		case "NaN":
			*x = jsonFloat(math.NaN())
		case "Inf", "+Inf", "Infinity":
			*x = jsonFloat(math.Inf(1))
		case "-Inf", "-Infinity":
			*x = jsonFloat(math.Inf(-1))
		default:
			return fmt.Errorf("%q is not a number", s)
		}
		return nil
	}
	if string(b) == "null" {
		return fmt.Errorf("null is not a number")
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*x = jsonFloat(f)
	return nil
}

// convertFloats converts a slice between float64 and jsonFloat (nil stays
// nil).
func convertFloats[T, U ~float64](xs []T) []U {
	if xs == nil {
		return nil
	}
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = U(x)
	}
	return out
}

// resultJSON is Result as stored: its floats as jsonFloats. The shadowing
// fields, shallower than the embedded Result's, take their JSON names.
type resultJSON struct {
	resultFields
	HPDTruth       jsonFloat   `json:"hpd_truth"`
	HPDThreshold   jsonFloat   `json:"hpd_threshold"`
	EllipseDist2   jsonFloat   `json:"ellipse_dist2"`
	EllipseRadius2 jsonFloat   `json:"ellipse_radius2"`
	Mean           []jsonFloat `json:"mean"`
	SD             []jsonFloat `json:"sd"`
	Median         []jsonFloat `json:"median,omitempty"`
	Rhat           []jsonFloat `json:"rhat,omitempty"`
	Seconds        jsonFloat   `json:"seconds"`
	FromLambda     jsonFloat   `json:"from_lambda,omitempty"`
	ParetoK        jsonFloat   `json:"pareto_k,omitempty"`
	ESS            jsonFloat   `json:"ess,omitempty"`
}

// resultFields is Result without its methods (no recursion into
// MarshalJSON).
type resultFields Result

// MarshalJSON writes the result with non-finite values as strings.
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(resultJSON{
		resultFields: resultFields(r),
		HPDTruth:     jsonFloat(r.HPDTruth), HPDThreshold: jsonFloat(r.HPDThreshold),
		EllipseDist2: jsonFloat(r.EllipseDist2), EllipseRadius2: jsonFloat(r.EllipseRadius2),
		Mean: convertFloats[float64, jsonFloat](r.Mean), SD: convertFloats[float64, jsonFloat](r.SD),
		Median: convertFloats[float64, jsonFloat](r.Median), Rhat: convertFloats[float64, jsonFloat](r.Rhat),
		Seconds: jsonFloat(r.Seconds), FromLambda: jsonFloat(r.FromLambda), ParetoK: jsonFloat(r.ParetoK), ESS: jsonFloat(r.ESS),
	})
}

// UnmarshalJSON reads what MarshalJSON writes (and plain numbers).
func (r *Result) UnmarshalJSON(b []byte) error {
	var j resultJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = Result(j.resultFields)
	r.HPDTruth, r.HPDThreshold = float64(j.HPDTruth), float64(j.HPDThreshold)
	r.EllipseDist2, r.EllipseRadius2 = float64(j.EllipseDist2), float64(j.EllipseRadius2)
	r.Mean, r.SD = convertFloats[jsonFloat, float64](j.Mean), convertFloats[jsonFloat, float64](j.SD)
	r.Median, r.Rhat = convertFloats[jsonFloat, float64](j.Median), convertFloats[jsonFloat, float64](j.Rhat)
	r.Seconds, r.FromLambda, r.ParetoK, r.ESS = float64(j.Seconds), float64(j.FromLambda), float64(j.ParetoK), float64(j.ESS)
	return nil
}
