package data

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The seed corpora are in testdata/fuzz/<FuzzName>/. Run a fuzzer with, for
// example,
//
//	go test -run='^$' -fuzz=FuzzReadCSV -fuzztime=60s -parallel=1 ./runtime/data/

func FuzzReadCSV(f *testing.F) {
	for _, s := range []string{
		"y\n1\n2\n",
		"y,x.1,x.2\n1,2,3\n4,5,\n",
		"key,value\nN,1\n",
		"\"x[1,1]\",\"x[1,2]\"\n1,2\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		values, err := ReadCSV("f.csv", bytes.NewReader(b))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.csv: ") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		names := map[string]bool{}
		for _, v := range values {
			if v.Name == "" || names[v.Name] {
				t.Fatalf("empty or repeated name %q", v.Name)
			}
			names[v.Name] = true
			checkInvariants(t, v)
			if len(v.Data) > 0 && !strings.HasPrefix(v.Where(len(v.Data)-1), "f.csv: ") {
				t.Fatalf("Where without the file name: %q", v.Where(0))
			}
		}
	})
}

func FuzzReadJSON(f *testing.F) {
	for _, s := range []string{
		`{"J": 8, "y": [28, 8, -3], "X": [[1, 2], [3, 4.5]]}`,
		`{"a": [], "b": [[], []], "s": ["NaN", "-inf"], "t": NaN}`,
		`{"x": [[1, 2], [3]]}`,
		`{"x": [1, [2]]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		values, err := ReadJSON("f.json", bytes.NewReader(b))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.json: ") {
				t.Fatalf("error without the file name: %v", err)
			}
		} else {
			for _, v := range values {
				checkInvariants(t, v)
			}
		}

		// Compare with encoding/json where it applies.
		valid := json.Valid(b)
		if err == nil && !valid && !bytes.HasPrefix(b, utf8BOM) && !hasBareWord(b) {
			t.Fatalf("accepted text that encoding/json rejects")
		}
		if !valid {
			return
		}
		ref, ok := referenceJSON(b)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("rejected text that the reference reads: %v", err)
		}
		if len(values) != len(ref) {
			t.Fatalf("%d values, reference has %d", len(values), len(ref))
		}
		for i, v := range values {
			r := ref[i]
			if v.Name != r.name || !slices.Equal(v.Dims, r.dims) || !sameFloats(v.Data, r.data) || v.IsInt != r.isInt {
				t.Fatalf("value %d: got %s %v %v int=%v, reference %s %v %v int=%v",
					i, v.Name, v.Dims, v.Data, v.IsInt, r.name, r.dims, r.data, r.isInt)
			}
		}
	})
}

// hasBareWord reports whether b holds a word that ReadJSON accepts outside
// strings and encoding/json does not: nan, inf or infinity in any case.
func hasBareWord(b []byte) bool {
	s := strings.ToLower(string(b))
	return strings.Contains(s, "nan") || strings.Contains(s, "inf")
}

// referenceJSON decodes a CmdStan JSON object with encoding/json, in key
// order. It reports false when the text is outside what ReadJSON accepts:
// not an object, a repeated key, a value that is not a number or an allowed
// string, a ragged array, nesting deeper than 64, or a number out of range.
func referenceJSON(b []byte) ([]want, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []want
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key := tok.(string)
		if seen[key] {
			return nil, false
		}
		seen[key] = true
		var x any
		if err := dec.Decode(&x); err != nil {
			return nil, false
		}
		w := want{name: key, isInt: true, data: []float64{}}
		var dims []int
		leafDepth := -1
		var walk func(x any, depth int) bool
		walk = func(x any, depth int) bool {
			if arr, isArr := x.([]any); isArr {
				if depth >= 64 || depth == leafDepth {
					return false
				}
				if depth == len(dims) {
					dims = append(dims, len(arr))
				} else if dims[depth] != len(arr) {
					return false
				}
				for _, e := range arr {
					if !walk(e, depth+1) {
						return false
					}
				}
				return true
			}
			if depth != len(dims) || leafDepth >= 0 && depth != leafDepth {
				return false
			}
			leafDepth = depth
			switch x := x.(type) {
			case json.Number:
				f, err := strconv.ParseFloat(string(x), 64)
				if err != nil && math.IsInf(f, 0) {
					return false
				}
				w.data = append(w.data, f)
				w.isInt = w.isInt && !strings.ContainsAny(string(x), ".eE")
				return true
			case string:
				f, ok := referenceSpecial[strings.ToLower(x)]
				if !ok {
					return false
				}
				w.data = append(w.data, f)
				w.isInt = false
				return true
			}
			return false
		}
		if !walk(x, 0) {
			return nil, false
		}
		// The walk checks the shape; the count is a second check of it.
		n := 1
		for _, d := range dims {
			n *= d
		}
		if n != len(w.data) {
			return nil, false
		}
		w.dims = dims
		out = append(out, w)
	}
	return out, true
}

var referenceSpecial = map[string]float64{
	"nan": math.NaN(), "+nan": math.NaN(), "-nan": math.NaN(),
	"inf": math.Inf(1), "+inf": math.Inf(1), "-inf": math.Inf(-1),
	"infinity": math.Inf(1), "+infinity": math.Inf(1), "-infinity": math.Inf(-1),
}

func FuzzParseSet(f *testing.F) {
	for _, s := range []string{"lambda=1", "y=[1, 2]", `X=[[1, "NaN"], [3, 4]]`, "a=-inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		v, err := ParseSet(arg)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--set ") {
				t.Fatalf("error without --set: %v", err)
			}
			return
		}
		checkInvariants(t, v)
	})
}
