package data

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestParseSet(t *testing.T) {
	tests := []struct {
		arg  string
		want want
	}{
		{"lambda=1", want{"lambda", nil, []float64{1}, true}},
		{" lambda = 0.5 ", want{"lambda", nil, []float64{0.5}, false}},
		{"eps=2.16e-05", want{"eps", nil, []float64{2.16e-05}, false}},
		{"a=-inf", want{"a", nil, []float64{nInf}, false}},
		{"a=NaN", want{"a", nil, []float64{nan}, false}},
		{"a=+4", want{"a", nil, []float64{4}, true}},
		{`a="Infinity"`, want{"a", nil, []float64{pInf}, false}},
		{"y=[1, 2, 3]", want{"y", []int{3}, []float64{1, 2, 3}, true}},
		{"y=[]", want{"y", []int{0}, []float64{}, true}},
		{`X=[[1, 2.5], [3, "NaN"]]`, want{"X", []int{2, 2}, []float64{1, 2.5, 3, nan}, false}},
		{"x_2=[NaN]", want{"x_2", []int{1}, []float64{nan}, false}},
	}
	for _, tt := range tests {
		v, err := ParseSet(tt.arg)
		if err != nil {
			t.Errorf("ParseSet(%q): %v", tt.arg, err)
			continue
		}
		checkValues(t, []*Value{v}, []want{tt.want})
	}

	v, err := ParseSet("X=[[1, 2], [3, 4]]")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := v.Where(2), "--set X[2][1]"; got != want {
		t.Errorf("Where(2) = %q, want %q", got, want)
	}
	if got, want := v.Origin(), "--set X"; got != want {
		t.Errorf("Origin = %q, want %q", got, want)
	}
	v, err = ParseSet("lambda=1")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := v.Where(0), "--set lambda"; got != want {
		t.Errorf("Where(0) = %q, want %q", got, want)
	}
	if got := v.File(); got != "--set" {
		t.Errorf("File = %q", got)
	}
}

func TestParseSetErrors(t *testing.T) {
	tests := []struct{ arg, want string }{
		{"lambda", `--set "lambda": expected name=value`},
		{"=1", `--set "=1": the name before '=' is missing`},
		{"2x=1", `--set "2x=1": "2x" is not a variable name`},
		{"x.1=1", `--set "x.1=1": "x.1" is not a variable name`},
		{"lambda=", `--set lambda: the value after '=' is missing`},
		{"lambda=one", `--set lambda: "one" is not a number`},
		{"lambda=1,2", `--set lambda: "1,2" is not a number`},
		{"lambda=1=2", `--set lambda: "1=2" is not a number`},
		{"y=[1, 2", `--set y: expected ',' or ']' in the array, found the end of the text`},
		{"y=[1, ", `--set y[2]: unexpected end of the text: expected a value`},
		{"y=[1, 2]]", `--set y: unexpected ']' after the value`},
		{"y=[[1, 2], [3]]", `--set y[2]: ragged array: it has 1 element but y[1] has 2`},
		{"y=[1, true]", `--set y[2]: true is not a number`},
		{`y="abc"`, `--set y: the string "abc" is not a number (the strings allowed are "NaN", "Inf", "-Inf", "Infinity" and "-Infinity")`},
		{`y=[1, {}]`, `--set y[2]: an object is not a number or an array of numbers`},
	}
	for _, tt := range tests {
		v, err := ParseSet(tt.arg)
		if err == nil {
			t.Errorf("ParseSet(%q) = %v, want an error", tt.arg, v)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("ParseSet(%q) error\n got: %s\nwant: %s", tt.arg, err, tt.want)
		}
	}
}

func mustCSV(t *testing.T, name, input string) []*Value {
	t.Helper()
	v, err := ReadCSV(name, strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustJSON(t *testing.T, name, input string) []*Value {
	t.Helper()
	v, err := ReadJSON(name, strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustSet(t *testing.T, arg string) *Value {
	t.Helper()
	v, err := ParseSet(arg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSet(t *testing.T) {
	var s Set // the zero Set is ready to use
	if _, ok := s.Lookup("y"); ok {
		t.Fatal("empty Set found y")
	}
	if s.Unused() != nil || s.Names() != nil {
		t.Fatal("empty Set has names")
	}
	s.AddSet(mustSet(t, "lambda=2")) // before the file that also gives lambda
	if err := s.AddFile(mustCSV(t, "data.csv", "y,x.1,x.2\n1,2,3\n")); err != nil {
		t.Fatal(err)
	}
	if err := s.AddFile(mustJSON(t, "more.json", `{"N": 1, "lambda": 1, "extra": [1]}`)); err != nil {
		t.Fatal(err)
	}
	s.AddSet(mustSet(t, "N=5"))
	s.AddSet(mustSet(t, "N=6")) // a later --set wins
	s.AddSet(mustSet(t, "only=[1]"))

	if got, want := s.Names(), []string{"lambda", "y", "x", "N", "extra", "only"}; !slices.Equal(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
	lookups := []struct {
		name   string
		origin string
		first  float64
	}{
		{"lambda", "--set lambda", 2},
		{"N", "--set N", 6},
		{"x", `data.csv: columns "x.1" … "x.2"`, 2},
	}
	for _, l := range lookups {
		v, ok := s.Lookup(l.name)
		if !ok {
			t.Fatalf("Lookup(%q) found nothing", l.name)
		}
		if v.Origin() != l.origin || v.Data[0] != l.first {
			t.Errorf("Lookup(%q) = %v from %q, want %v from %q", l.name, v.Data, v.Origin(), l.first, l.origin)
		}
	}
	if _, ok := s.Lookup("missing"); ok {
		t.Error("Lookup(missing) found something")
	}
	var unused []string
	for _, v := range s.Unused() {
		unused = append(unused, v.Origin())
	}
	if want := []string{`data.csv: column "y"`, `more.json: key "extra"`, "--set only"}; !slices.Equal(unused, want) {
		t.Errorf("Unused = %q, want %q", unused, want)
	}
}

func TestSetErrors(t *testing.T) {
	var s Set
	if err := s.AddFile(mustCSV(t, "a.csv", "y,x.1\n1,2\n")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		values []*Value
		want   string
	}{{
		name:   "same name in two files",
		values: mustJSON(t, "b.json", `{"z": 1, "x": [[1]]}`),
		want:   `x is given twice: in a.csv (column "x.1") and in b.json (key "x")`,
	}, {
		name:   "same name in a key-value table",
		values: mustCSV(t, "meta.csv", "key,value\nN,1\ny,2\n"),
		want:   `y is given twice: in a.csv (column "y") and in meta.csv (key "y", row 3)`,
	}, {
		name:   "same name twice in one list",
		values: append(mustJSON(t, "c.json", `{"w": 1}`), mustJSON(t, "d.json", `{"w": 2}`)...),
		want:   `w is given twice: in c.json (key "w") and in d.json (key "w")`,
	}}
	for _, tt := range tests {
		err := s.AddFile(tt.values)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: error\n got: %v\nwant: %s", tt.name, err, tt.want)
		}
	}
	// A failed AddFile leaves the Set unchanged.
	if got, want := s.Names(), []string{"y", "x"}; !slices.Equal(got, want) {
		t.Errorf("Names after failed adds = %v, want %v", got, want)
	}
}

func TestValueWithoutSource(t *testing.T) {
	// A value made by the caller, not by a reader.
	v := &Value{Name: "x", Dims: []int{2, 2}, Data: []float64{1, 2, 3, 4}}
	if got, want := v.Where(2), "x[2][1]"; got != want {
		t.Errorf("Where(2) = %q, want %q", got, want)
	}
	if v.Origin() != "x" || v.File() != "" || v.Len() != 4 {
		t.Errorf("Origin %q, File %q, Len %d", v.Origin(), v.File(), v.Len())
	}
	var s Set
	if err := s.AddFile([]*Value{v, v}); err == nil || err.Error() != "x is given twice: in x and in x" {
		t.Errorf("AddFile error = %v", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "d.csv")
	if err := os.WriteFile(csv, []byte("y\n1\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := Load([]string{csv}, []string{"lambda=0.5"})
	if err != nil {
		t.Fatal(err)
	}
	y, ok := set.Lookup("y")
	if !ok || len(y.Data) != 2 {
		t.Fatalf("y: %v %v", y, ok)
	}
	l, ok := set.Lookup("lambda")
	if !ok || l.Data[0] != 0.5 {
		t.Fatalf("lambda: %v %v", l, ok)
	}
	if _, err := Load([]string{filepath.Join(dir, "missing.csv")}, nil); err == nil {
		t.Error("missing file accepted")
	}
	if _, err := Load(nil, []string{"novalue"}); err == nil {
		t.Error("bad --set accepted")
	}
}

// TestSetConcurrentLookups looks values up from several goroutines at once
// (the chains of a run read their initial values so); run with -race.
func TestSetConcurrentLookups(t *testing.T) {
	s := &Set{}
	for _, arg := range []string{"a=1", "b=2", "c=3"} {
		v, err := ParseSet(arg)
		if err != nil {
			t.Fatal(err)
		}
		s.AddSet(v)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				for _, name := range []string{"a", "b"} {
					if _, ok := s.Lookup(name); !ok {
						t.Errorf("%s not found", name)
					}
				}
			}
		}()
	}
	wg.Wait()
	if u := s.Unused(); len(u) != 1 || u[0].Name != "c" {
		t.Errorf("unused %v, want c", u)
	}
}

// TestParseFlagSource checks that a value given by a flag or a REPL
// command names it in its messages and provenance.
func TestParseFlagSource(t *testing.T) {
	for _, tt := range []struct {
		flag, arg      string
		origin, where1 string
		err            string
	}{
		{"--init", "y=[1, 2]", "--init y", "--init y[2]", ""},
		{":lp", "y=[1, 2]", ":lp y", ":lp y[2]", ""},
		{":set", "N=abc", "", "", `:set N: "abc" is not a number`},
		{"--at", "mu=1e400", "", "", `--at mu: "1e400" is too large for a 64-bit float`},
		{":lp", "mu", "", "", `:lp "mu": expected name=value`},
	} {
		v, err := ParseFlag(tt.flag, tt.arg)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("ParseFlag(%q, %q): error %v, want %q", tt.flag, tt.arg, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if v.Origin() != tt.origin || v.Where(1) != tt.where1 {
			t.Errorf("ParseFlag(%q, %q): Origin %q, Where(1) %q; want %q, %q", tt.flag, tt.arg, v.Origin(), v.Where(1), tt.origin, tt.where1)
		}
	}
}

// TestLoadSets checks the --set arguments of Load: one that replaces a
// file's value is noted, one name given twice is refused.
func TestLoadSets(t *testing.T) {
	dir := t.TempDir()
	js := filepath.Join(dir, "d.json")
	if err := os.WriteFile(js, []byte(`{"lambda": 1, "N": 2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		sets    []string
		notes   []string
		wantErr string
	}{
		{"new name", []string{"mu=2"}, nil, ""},
		{"replaces a file's value", []string{"lambda=5", "mu=1"}, []string{`--set lambda=5 replaces the value in ` + js + ` (key "lambda")`}, ""},
		{"same name twice", []string{"N=20", "N=21"}, nil, "--set N is given twice (--set N=20 and --set N=21)"},
		{"same name twice, spaces", []string{"N=20", " N = [1] "}, nil, "--set N is given twice (--set N=20 and --set N = [1])"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := Load([]string{js}, tt.sets)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := set.Notes(); !slices.Equal(got, tt.notes) {
				t.Errorf("notes %q, want %q", got, tt.notes)
			}
		})
	}
}
