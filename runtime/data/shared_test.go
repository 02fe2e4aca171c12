package data

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestPosteriordbData reads every posteriordb data file in shared/ and
// compares the values with an independent decoding by encoding/json.
func TestPosteriordbData(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(sharedDir(t), "posteriordb", "*", "data.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 15 {
		t.Fatalf("found %d posteriordb data files, want at least 15", len(files))
	}
	for _, path := range files {
		t.Run(filepath.Base(filepath.Dir(path)), func(t *testing.T) {
			values, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			ref := decodeReference(t, path)
			if len(values) != len(ref) {
				t.Fatalf("%d values, want %d", len(values), len(ref))
			}
			for _, v := range values {
				r, ok := ref[v.Name]
				if !ok {
					t.Fatalf("unexpected key %q", v.Name)
				}
				checkValues(t, []*Value{v}, []want{r})
				if got, want := v.Origin(), path+`: key "`+v.Name+`"`; got != want {
					t.Errorf("Origin = %q, want %q", got, want)
				}
			}
		})
	}
}

// decodeReference decodes a JSON data file with encoding/json and flattens
// each value by recursion over the decoded arrays.
func decodeReference(t *testing.T, path string) map[string]want {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	out := map[string]want{}
	for key, x := range m {
		w := want{name: key, isInt: true, data: []float64{}}
		var dims []int
		var walk func(x any, depth int)
		walk = func(x any, depth int) {
			switch x := x.(type) {
			case []any:
				if depth == len(dims) {
					dims = append(dims, len(x))
				} else if dims[depth] != len(x) {
					t.Fatalf("%s: reference: ragged", key)
				}
				for _, e := range x {
					walk(e, depth+1)
				}
			case json.Number:
				f, err := strconv.ParseFloat(string(x), 64)
				if err != nil {
					t.Fatalf("%s: reference: %v", key, err)
				}
				w.data = append(w.data, f)
				w.isInt = w.isInt && !strings.ContainsAny(string(x), ".eE")
			default:
				t.Fatalf("%s: reference: unexpected %T", key, x)
			}
		}
		walk(x, 0)
		w.dims = dims
		out[key] = w
	}
	return out
}

// TestExpAData reads Experiment A's CSV files and compares them with an
// independent split of their lines.
func TestExpAData(t *testing.T) {
	dir := filepath.Join(sharedDir(t), "testdata", "expA")
	for _, file := range []string{"data.csv", "crn_z.csv", "reference.csv"} {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join(dir, file)
			values, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
			header := strings.Split(lines[0], ",")
			if len(values) != len(header) {
				t.Fatalf("%d values for header %v", len(values), header)
			}
			for j, name := range header {
				w := want{name: name, dims: []int{len(lines) - 1}, isInt: true}
				for _, line := range lines[1:] {
					cell := strings.Split(line, ",")[j]
					f, err := strconv.ParseFloat(cell, 64)
					if err != nil {
						t.Fatal(err)
					}
					w.data = append(w.data, f)
					w.isInt = w.isInt && !strings.ContainsAny(cell, ".eE")
				}
				checkValues(t, values[j:j+1], []want{w})
			}
		})
	}
	if values, err := ReadFile(filepath.Join(dir, "data.csv")); err != nil || values[0].Dims[0] != 120 {
		t.Errorf("data.csv: want y of 120 rows, got %v, %v", values, err)
	}

	// meta.csv is a key-value table of scalars.
	values, err := ReadFile(filepath.Join(dir, "meta.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	got := map[string]float64{}
	for _, v := range values {
		names = append(names, v.Name)
		if len(v.Dims) != 0 || len(v.Data) != 1 {
			t.Errorf("%s: dims %v, want a scalar", v.Name, v.Dims)
		}
		got[v.Name] = v.Data[0]
	}
	wantNames := []string{"N", "K", "T", "lambda", "eta", "alpha", "h_median_nn", "eps", "seed_y", "seed_z", "y_mean", "y_sd"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("meta.csv names %v, want %v", names, wantNames)
	}
	if got["N"] != 120 || got["lambda"] != 1 || got["eps"] != 2.1636913984794808e-05 {
		t.Errorf("meta.csv: N = %v, lambda = %v, eps = %v", got["N"], got["lambda"], got["eps"])
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		path   string
		origin string
	}{
		{write("d.json", `{"y": [1]}`), `key "y"`},
		{write("D.JSON", `{"y": [1]}`), `key "y"`},
		{write("d.csv", "y\n1\n"), `column "y"`},
		{write("d.txt", "y\n1\n"), `column "y"`},
	}
	for _, tt := range tests {
		values, err := ReadFile(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := values[0].Origin(), tt.path+": "+tt.origin; got != want {
			t.Errorf("Origin = %q, want %q", got, want)
		}
	}
	missing := filepath.Join(dir, "nope.csv")
	_, err := ReadFile(missing)
	if want := "data file: open " + missing + ": no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("ReadFile(missing) error = %v, want %s", err, want)
	}
}
