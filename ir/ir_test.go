package ir

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/shmlang/shm/lang"
)

func mustCheck(t *testing.T, src string) *Model {
	t.Helper()
	m, errs := CheckSource("t.shm", src)
	if len(errs) > 0 {
		t.Fatalf("unexpected errors:\n%v", errs)
	}
	return m
}

func TestBinaryType(t *testing.T) {
	var (
		i, r  = lang.IntType, lang.RealType
		v, rv = lang.VectorType, lang.RowVectorType
		m     = lang.MatrixType
		ai    = lang.ArrayOf(lang.IntType, 1)
		bad   = lang.BadType
	)
	tests := []struct {
		op   string
		l, r lang.Type
		want lang.Type
	}{
		{"+", i, i, i}, {"+", i, r, r}, {"-", r, i, r}, {"*", i, i, i}, {"/", i, i, i},
		{"/", r, i, r}, {"%", i, i, i}, {"%", r, i, bad}, {"%/%", i, i, i}, {"^", i, i, r},
		{"+", v, v, v}, {"+", v, r, v}, {"+", i, m, m}, {"+", v, rv, bad}, {"+", ai, ai, bad},
		{"*", rv, v, r}, {"*", v, rv, m}, {"*", m, v, v}, {"*", rv, m, rv}, {"*", m, m, m},
		{"*", v, v, bad}, {"*", v, m, bad}, {"*", r, m, m}, {"*", v, r, v},
		{".*", v, v, v}, {"./", m, m, m}, {"./", r, v, v}, {".*", v, rv, bad}, {".^", v, r, v},
		{"/", v, r, v}, {"/", r, v, bad}, {"/", rv, m, rv}, {"/", m, m, m},
		{"\\", m, v, v}, {"\\", m, m, m}, {"\\", v, v, bad},
		{"<", i, r, i}, {"==", r, r, i}, {"&&", i, r, i}, {"<", v, v, bad}, {"||", v, i, bad},
	}
	for _, tt := range tests {
		got, ok := binaryType(tt.op, tt.l, tt.r)
		if !ok {
			got = bad
		}
		if got != tt.want {
			t.Errorf("%s %s %s: got %s, want %s", tt.l, tt.op, tt.r, got, tt.want)
		}
	}
}

func TestIndexTypes(t *testing.T) {
	m := mustCheck(t, `data {
  vector[3] v; matrix[3, 4] M; array[2, 3] real a; array[2] vector[3] av; array[5] int ii; array[2] matrix[3, 3] am;
}
transformed data {
  real t1 = v[1];
  vector[2] t2 = v[2:3];
  vector[5] t3 = v[ii];
  row_vector[4] t4 = M[1];
  real t5 = M[1, 2];
  vector[3] t6 = M[:, 2];
  row_vector[2] t7 = M[1, 2:3];
  matrix[2, 4] t8 = M[1:2];
  matrix[5, 5] t9 = M[ii, ii];
  array[3] real t10 = a[1];
  real t11 = a[1, 2];
  array[2] real t12 = a[:, 1];
  vector[3] t13 = av[1];
  real t14 = av[1, 2];
  array[2] real t15 = av[:, 2];
  real t16 = am[1, 2, 3];
  row_vector[3] t17 = am[1, 2];
  array[2] vector[3] t18 = am[:, :, 1];
  real t19 = a[1][2];
}`)
	if len(m.TransformedData) != 19 {
		t.Fatalf("got %d statements", len(m.TransformedData))
	}
}

func TestDataDependence(t *testing.T) {
	m := mustCheck(t, `data { int N; vector[N] y; }
transformed data { real s = sum(y); real d = normal_rng(0, 1); }
parameters { real mu; }
transformed parameters { real tp = mu + s; }
model { real loc = s; for (i in 1:N) loc += 1; y ~ normal(mu, 1); }
generated quantities { real g = s; }`)
	want := map[string]bool{"N": true, "y": true, "s": true, "d": true, "mu": false, "tp": false, "loc": false, "i": true, "g": false}
	for _, v := range m.Vars {
		if w, ok := want[v.Name]; ok && v.Data != w {
			t.Errorf("%s: data = %v, want %v", v.Name, v.Data, w)
		}
	}
}

func TestResolvedCalls(t *testing.T) {
	m := mustCheck(t, `data { vector[4] y; array[4] int n; }
parameters { real mu; real<lower=0> s; }
model {
  y ~ normal(mu, s);
  n ~ poisson_log(mu);
  target += sinkhorn(mu + y, y, eps = 0.5, iters = 10, grad = "envelope");
  target += crn(3, sinkhorn(mu + s * std_normal_rng(4), y, eps = 0.5), seed = 7);
}`)
	tl := m.ModelBlock[0].(*Tilde)
	if tl.Func.Name != "normal_lpdf" || len(tl.Args) != 2 {
		t.Errorf("tilde resolved to %s with %d args", tl.Func.Name, len(tl.Args))
	}
	if f := m.ModelBlock[1].(*Tilde).Func.Name; f != "poisson_log_lpmf" {
		t.Errorf("discrete tilde resolved to %s", f)
	}
	call := m.ModelBlock[2].(*TargetAdd).Expr.(*Call)
	if call.Func.Name != "sinkhorn" || call.Type() != lang.RealType {
		t.Fatalf("sinkhorn call: %s %s", call.Func.Name, call.Type())
	}
	named := map[string]string{}
	for i, p := range call.Func.Named {
		if call.Named[i] != nil {
			named[p.Name] = strings.TrimSpace(reflect.TypeOf(call.Named[i]).String())
		}
	}
	if len(named) != 3 || named["grad"] != "*ir.StringLit" {
		t.Errorf("named arguments: %v", named)
	}
	crn := m.ModelBlock[3].(*TargetAdd).Expr.(*CRN)
	if k, _ := ConstInt(crn.K); k != 3 || crn.Seed == nil || crn.ID != 0 || len(m.CRNs) != 1 {
		t.Errorf("crn: K=%d seed=%v id=%d", k, crn.Seed, crn.ID)
	}
}

func TestLayout(t *testing.T) {
	m := mustCheck(t, `data { int N; }
parameters {
  real a;
  vector<lower=0>[N] v;
  matrix[2, 3] M;
  array[2] vector[2] av;
}
model { }`)
	l, err := NewLayout(context.Background(), m.Params, func(d *Decl) ([]int, error) {
		if dims, ok := StaticDims(d); ok {
			return dims, nil
		}
		return []int{3}, nil // N = 3
	})
	if err != nil {
		t.Fatal(err)
	}
	if l.Dim != 1+3+6+4 {
		t.Errorf("dim %d", l.Dim)
	}
	wantOffsets := []int{0, 1, 4, 10}
	for i, e := range l.Entries {
		if e.Offset != wantOffsets[i] {
			t.Errorf("%s at %d, want %d", e.Decl.Var.Name, e.Offset, wantOffsets[i])
		}
	}
	if got := strings.Join(l.Entries[2].Columns, " "); got != "M.1.1 M.2.1 M.1.2 M.2.2 M.1.3 M.2.3" {
		t.Errorf("matrix columns: %s", got)
	}
	if got := strings.Join(l.Entries[3].Columns, " "); got != "av.1.1 av.2.1 av.1.2 av.2.2" {
		t.Errorf("array of vectors columns: %s", got)
	}
	if got := l.Entries[0].Columns; !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("scalar columns: %v", got)
	}
	if d := m.Params[1]; d.ShapeText != "vector[N]" || d.ConstraintText != "<lower=0>" {
		t.Errorf("shape %q constraint %q", d.ShapeText, d.ConstraintText)
	}
}

func TestConstInt(t *testing.T) {
	m := mustCheck(t, `transformed data {
  int a = 2 + 3 * 4;
  int b = -(7 %/% 2) + 10 % 4;
  int c = 1 / 0;
}`)
	want := []struct {
		v  int64
		ok bool
	}{{14, true}, {-1, true}, {0, false}}
	for i, s := range m.TransformedData {
		v, ok := ConstInt(s.(*DeclStmt).Decl.Init)
		if v != want[i].v || ok != want[i].ok {
			t.Errorf("statement %d: got %d %v", i, v, ok)
		}
	}
}

func TestEditDistanceAndSuggest(t *testing.T) {
	tests := []struct {
		a, b string
		d    int
	}{{"normal", "nromal", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"same", "same", 0}}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.d)
		}
	}
	if got := suggest("sigmaa", []string{"mu", "sigma"}); got != `; did you mean "sigma"?` {
		t.Errorf("suggest: %q", got)
	}
	if got := suggest("foo", []string{"col", "log"}); got != "" {
		t.Errorf("suggest too loose: %q", got)
	}
}

// TestNewLayoutContext: naming the columns of many values stops once the
// context is done.
func TestNewLayoutContext(t *testing.T) {
	m, errs := CheckSource("l.shm", "parameters {\n  vector[1000000] z;\n}\nmodel {\n  z ~ normal(0, 1);\n}\n")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	dims := func(d *Decl) ([]int, error) { return []int{1000000}, nil }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewLayout(ctx, m.Params, dims); err != context.Canceled {
		t.Errorf("a done context: %v, want context.Canceled", err)
	}
	l, err := NewLayout(context.Background(), m.Params, dims)
	if err != nil || len(l.Entries[0].Columns) != 1000000 || l.Entries[0].Columns[999999] != "z.1000000" {
		t.Errorf("%v", err)
	}
}
