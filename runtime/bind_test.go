package runtime

import (
	"strings"
	"testing"

	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/runtime/data"
)

func bindError(t *testing.T, src string, files map[string]string) error {
	t.Helper()
	m, errs := ir.CheckSource("t.shm", src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	set := &data.Set{}
	var names []string
	for name, text := range files {
		var vals []*data.Value
		var err error
		if arg, ok := strings.CutPrefix(name, "--set "); ok {
			v, err := data.ParseSet(arg)
			if err != nil {
				return err
			}
			set.AddSet(v)
			continue
		}
		if strings.HasSuffix(name, ".json") {
			vals, err = data.ReadJSON(name, strings.NewReader(text))
		} else {
			vals, err = data.ReadCSV(name, strings.NewReader(text))
		}
		if err != nil {
			return err
		}
		if err := set.AddFile(vals); err != nil {
			return err
		}
		names = append(names, name)
	}
	_, err := Bind(m, set, Options{Impls: testImpls(), DataFiles: names})
	return err
}

func TestBadData(t *testing.T) {
	const vecModel = "data { int N; vector[N] y; }\nparameters { real mu; }\nmodel { }"
	const sizedModel = "data { int<lower=0> N; vector<lower=0>[N] y; array[N] int<lower=0> k; }\nmodel { }"
	const matModel = "data { int N; int K; matrix[N, K] x; }\nmodel { }"
	const fixedMat = "data { matrix[3, 3] x; }\nmodel { }"
	tests := []struct {
		name  string
		src   string
		files map[string]string
		want  string
	}{
		// Sizes of constrained parameters given by data: the error is at
		// the declaration.
		{"cholesky_factor_cov of fewer rows than columns", "data { int M; }\nparameters { cholesky_factor_cov[M, 3] L; }\nmodel { }",
			map[string]string{"--set M=2": ""}, "t.shm:2:14: L (cholesky_factor_cov[M, 3]): cholesky_factor_cov[M, N] needs M ≥ N, got 2 < 3"},
		{"empty simplex", "data { int K; }\nparameters { simplex[K] s; }\nmodel { }",
			map[string]string{"--set K=0": ""}, "t.shm:2:14: s (simplex[K]): a simplex needs at least 1 element, got 0"},
		{"missing variable", "data { vector[2] y; }\nmodel { }", map[string]string{"data.csv": "z\n1\n2\n"},
			"data variable y (vector[2]) is missing: not found in data.csv"},
		{"missing column of an inferred size", vecModel, map[string]string{"data.csv": "z\n1\n2\n"},
			"data variable y (vector[N]) is missing: not found in data.csv (N, its size, would have been inferred from it)"},
		{"wrong length", "data { vector[3] y; }\nmodel { }", map[string]string{"data.csv": "y\n1\n2\n"},
			`data.csv: column "y": y is declared vector[3] with sizes [3], but the data has sizes [2]`},
		{"wrong length from JSON", "data { int N; vector[N] y; }\nmodel { }", map[string]string{"d.json": `{"N": 3, "y": [1, 2]}`},
			`d.json: key "y": y is declared vector[N] with sizes [3], but the data has sizes [2]`},
		{"non-numeric cell", vecModel, map[string]string{"data.csv": "y\n1\nabc\n"},
			`data.csv: column "y", row 3`},
		{"NaN", vecModel, map[string]string{"data.csv": "y\n1\nNaN\n3\n"},
			`data.csv: column "y", row 3: y[2] is NaN, which is not allowed in data`},
		{"violated constraint", sizedModel, map[string]string{"data.csv": "y,k\n1,0\n-2,1\n3,2\n"},
			`data.csv: column "y", row 3: y[2] = -2 violates the constraint lower=0`},
		{"violated int constraint", sizedModel, map[string]string{"data.csv": "y,k\n1,0\n2,-1\n"},
			`data.csv: column "k", row 3: k[2] = -1 violates the constraint lower=0`},
		{"non-integer int", sizedModel, map[string]string{"data.csv": "y,k\n1,0.5\n"},
			`data.csv: column "k", row 2: k[1] must be an int, found "0.5"`},
		// CmdStan reads an int only from an integer literal.
		{"int written with a fraction", sizedModel, map[string]string{"data.csv": "y,k\n1,0\n2,3.0\n"},
			`data.csv: column "k", row 3: k[2] must be an int, found "3.0"`},
		{"int written with an exponent", sizedModel, map[string]string{"data.csv": "y,k\n1,1e3\n"},
			`data.csv: column "k", row 2: k[1] must be an int, found "1e3"`},
		{"int of a matrix of columns", "data { array[2, 2] int k; }\nmodel { }", map[string]string{"data.csv": "k.1,k.2\n1,2\n3,4.0\n"},
			`data.csv: column "k.2", row 3: k[2, 2] must be an int, found "4.0"`},
		{"int from JSON", vecModel, map[string]string{"d.json": `{"N": 2.0, "y": [1, 2]}`},
			`d.json: key "N": N must be an int, found "2.0"`},
		{"int array from JSON", sizedModel, map[string]string{"d.json": `{"y": [1, 2], "k": [1, 2e0]}`},
			`d.json: key "k"[2]: k[2] must be an int, found "2e0"`},
		{"int from a key-value table", vecModel, map[string]string{"d.csv": "name,value\nN,2.5\n"},
			`d.csv: key "N", row 2: N must be an int, found "2.5"`},
		{"int from --set", vecModel, map[string]string{"--set N=1.0": "", "d.csv": "y\n1\n"},
			`--set N: N must be an int, found "1.0"`},
		// CmdStan refuses a one-element array for a scalar.
		{"one-element array for an int", vecModel, map[string]string{"d.json": `{"N": [2], "y": [1, 2]}`},
			`d.json: key "N": N is declared int, a scalar, but the data has sizes [1]`},
		{"one-element array for a real", "data { real lambda; }\nmodel { }", map[string]string{"d.json": `{"lambda": [1]}`},
			`d.json: key "lambda": lambda is declared real, a scalar, but the data has sizes [1]`},
		{"one-element array from --set", "data { real lambda; }\nmodel { }", map[string]string{"--set lambda=[1]": ""},
			`--set lambda: lambda is declared real, a scalar, but the data has sizes [1]`},
		{"scalar for a vector of a given size", vecModel, map[string]string{"--set y=3": "", "d.csv": "N,y\n2,1\n,2\n"},
			`--set y: y is declared vector[N] with sizes [2], but the data gives a scalar`},
		{"scalar for a vector whose size is inferred", vecModel, map[string]string{"--set y=3": "", "d.csv": "y\n1\n2\n"},
			`--set y: y is declared vector[N], but the data gives a scalar (N, its size, would have been inferred from it)`},
		{"matrix column missing", matModel, map[string]string{"data.csv": "x.1,x.3\n1,2\n3,4\n"},
			`x.2`},
		{"matrix too few columns", fixedMat, map[string]string{"data.csv": "x.1,x.2\n1,2\n3,4\n5,6\n"},
			`data.csv: columns "x.1" … "x.2": x is declared matrix[3, 3] with sizes [3, 3], but the data has sizes [3, 2]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := bindError(t, tt.src, tt.files)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestGoodDataShapes(t *testing.T) {
	src := `data {
  int N; int K;
  matrix[N, K] x;
  array[N] vector[K] av;
  array[2, 2] int ii;
  real s;
}
transformed data {
  real check = x[2, 1] + av[2, 2] + ii[2, 1] + s;
  print("check=", check);
}
model { }`
	var out strings.Builder
	m, errs := ir.CheckSource("t.shm", src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	set := &data.Set{}
	csv, err := data.ReadCSV("d.csv", strings.NewReader("x.1,x.2,av.1,av.2\n1,2,3,4\n5,6,7,8\n"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := data.ReadJSON("d.json", strings.NewReader(`{"ii": [[1, 2], [30, 4]], "s": 0.5}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := set.AddFile(csv); err != nil {
		t.Fatal(err)
	}
	if err := set.AddFile(js); err != nil {
		t.Fatal(err)
	}
	if _, err := Bind(m, set, Options{Impls: testImpls(), Print: &out}); err != nil {
		t.Fatal(err)
	}
	// x[2,1] = 5, av[2,2] = 8, ii[2,1] = 30, s = 0.5; N and K inferred.
	if got := out.String(); got != "check=43.5\n" {
		t.Errorf("print output %q", got)
	}
}
