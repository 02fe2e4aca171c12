package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	goparser "go/parser"
	"go/token"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shmlang/shm/internal/testprogs"
	"github.com/shmlang/shm/ir"
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/runtime/data"
)

// FuzzDensity checks that no program and no point makes the runtime
// panic, and that the compiled plans and the interpreter agree: the same
// log density and gradient bit for bit, or the same error; and the
// default evaluation (plans, lifted and hoisted loops) too: bit for bit
// where it lifted or hoisted no loop, else to 1e-8.
// Each accepted program gets data made up from its declarations
// (fuzzData) and a point on the unconstrained scale drawn from seed; an
// evaluation that runs out of time or memory ends the case. The seeds are
// the repository's programs and those written whole in this package's
// tests (loops, user functions, crn, ODEs: what the plans compile).
func FuzzDensity(f *testing.F) {
	for _, src := range testprogs.All(f, "..") {
		f.Add(src, uint64(1))
	}
	for _, src := range testSources(f) {
		f.Add(src, uint64(2))
	}
	f.Fuzz(func(t *testing.T, src string, seed uint64) {
		m, errs := ir.CheckSource("fuzz.shm", src)
		if len(errs) > 0 {
			return
		}
		set, ok := fuzzData(m, seed)
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		bm, err := Bind(m, set, Options{Impls: Builtins(), Seed: 1, Context: ctx, MaxValues: 1 << 22})
		if err != nil {
			return
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		theta := make([]float64, bm.Dim())
		for i := range theta {
			theta[i] = 4*rng.Float64() - 2
		}
		// Plans, the interpreter, and the default (plans with lifted and
		// hoisted loops, which sum in another order: TestLiftedLoops).
		var lp [3]float64
		var grad [3][]float64
		var evalErrs [3]error
		reordered := false // the default evaluation lifted or hoisted a loop
		for k, noPlans := range []bool{false, true, false} {
			d, err := bm.NewDensity()
			if err != nil {
				return
			}
			d.ev.noPlans, d.ev.noLift = noPlans, k < 2
			grad[k] = make([]float64, len(theta))
			lp[k], evalErrs[k] = d.LogDensityGrad(theta, grad[k])
			reordered = k == 2 && d.ev.lifted+d.ev.hoisted > 0
		}
		for _, err := range evalErrs {
			if err != nil && (ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) ||
				strings.Contains(err.Error(), "one evaluation may hold")) {
				return
			}
		}
		for _, k := range []int{0, 2} {
			if (evalErrs[k] == nil) != (evalErrs[1] == nil) ||
				evalErrs[k] != nil && evalErrs[k].Error() != evalErrs[1].Error() {
				t.Fatalf("errors: %s %v, interpreted %v", fuzzPaths[k], evalErrs[k], evalErrs[1])
			}
		}
		if evalErrs[0] != nil {
			return
		}
		if !sameBits(lp[0], lp[1]) {
			t.Errorf("log density: planned %.17g, interpreted %.17g", lp[0], lp[1])
		}
		// Without a lifted or hoisted loop the default evaluation is the
		// planned one.
		agree := sameBits
		if reordered {
			agree = near
		}
		if !agree(lp[2], lp[1]) {
			t.Errorf("log density: default %.17g, interpreted %.17g (reordered: %v)", lp[2], lp[1], reordered)
		}
		for i := range grad[0] {
			if !sameBits(grad[0][i], grad[1][i]) {
				t.Errorf("gradient %d: planned %.17g, interpreted %.17g", i, grad[0][i], grad[1][i])
			}
			if !agree(grad[2][i], grad[1][i]) {
				t.Errorf("gradient %d: default %.17g, interpreted %.17g (reordered: %v)", i, grad[2][i], grad[1][i], reordered)
			}
		}
	})
}

// testSources returns the string literals of this package's test files
// that hold a model block.
func testSources(t testing.TB) []string {
	files, err := filepath.Glob("*_test.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, file := range files {
		af, err := goparser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && strings.Contains(s, "model {") {
					out = append(out, s)
				}
			}
			return true
		})
	}
	return out
}

// fuzzPaths names FuzzDensity's three evaluations.
var fuzzPaths = [3]string{"planned", "interpreted", "default"}

// near reports whether a and b agree to 1e-8 relative to max(1, |b|), or
// are the same infinity, or both NaN: sums of the same terms in two orders
// (a sum that cancels terms many orders larger than itself could differ
// more; a failure here is to be read with that in mind).
func near(a, b float64) bool {
	return sameBits(a, b) || math.Abs(a-b) <= 1e-8*math.Max(1, math.Abs(b))
}

// sameBits reports whether a and b are the same double, any NaN matching
// any other.
func sameBits(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
}

// fuzzData makes up a value for every data declaration of m: ints 2 (1
// inside arrays, where they often index) and reals drawn from seed, moved
// within the declaration's bounds; the constrained types a valid value
// (uniform simplex, first unit vector, increasing ordered vectors,
// identity matrices). A size or bound must be a literal, an earlier int,
// or +, − and * of those, and the sizes stay small; ok is false for a
// program that has other sizes, whose data this does not make.
func fuzzData(m *ir.Model, seed uint64) (set *data.Set, ok bool) {
	rng := rand.New(rand.NewPCG(seed, 3))
	ints := map[*ir.Var]int64{}
	values := map[string]any{}
	total := 0
	for _, d := range m.Data {
		var dims []int
		for _, e := range append(append([]ir.Expr(nil), d.ArraySizes...), d.Sizes...) {
			n, ok := fuzzInt(e, ints)
			if !ok || n < 0 || n > 6 {
				return nil, false
			}
			dims = append(dims, int(n))
		}
		size := product(dims)
		if total += size; total > 2000 {
			return nil, false
		}
		lo, hasLo := fuzzReal(d.Lower, ints)
		hi, hasHi := fuzzReal(d.Upper, ints)
		isInt := d.Var.Type.Base == lang.Int
		flat := make([]any, size)
		per := product(dims[len(d.ArraySizes):]) // the entries of one vector or matrix
		for i := range flat {
			switch {
			case d.Special != lang.NoSpecial:
				flat[i] = specialEntry(d.Special, dims[len(d.ArraySizes):], i%max(per, 1))
			case isInt:
				v := int64(2)
				if len(dims) > 0 {
					v = 1
				}
				if hasLo && float64(v) < lo {
					v = int64(math.Ceil(lo))
				}
				if hasHi && float64(v) > hi {
					v = int64(math.Floor(hi))
				}
				flat[i] = v
			default:
				x := 2*rng.Float64() - 1
				switch {
				case hasLo && hasHi:
					x = lo + (hi-lo)*(x+1)/2
				case hasLo:
					x = lo + 0.1 + math.Abs(x)
				case hasHi:
					x = hi - 0.1 - math.Abs(x)
				}
				flat[i] = x
			}
		}
		if isInt && len(dims) == 0 {
			ints[d.Var] = flat[0].(int64)
		}
		values[d.Var.Name] = nest(flat, dims)
	}
	js, err := json.Marshal(values)
	if err != nil {
		return nil, false
	}
	vals, err := data.ReadJSON("fuzz.json", bytes.NewReader(js))
	if err != nil {
		return nil, false
	}
	set = &data.Set{}
	if err := set.AddFile(vals); err != nil {
		return nil, false
	}
	return set, true
}

// specialEntry is entry i (row-major) of a valid value of a constrained
// vector or matrix type with sizes dims.
func specialEntry(s lang.Special, dims []int, i int) any {
	switch s {
	case lang.Simplex:
		return 1 / float64(dims[0])
	case lang.UnitVector:
		if i == 0 {
			return 1.0
		}
		return 0.0
	case lang.Ordered:
		return float64(i)
	case lang.PositiveOrdered:
		return float64(i + 1)
	}
	// Matrices: the identity (its top square for a Cholesky factor of
	// more rows than columns).
	cols := dims[len(dims)-1]
	if i/cols == i%cols {
		return 1.0
	}
	return 0.0
}

// nest arranges the row-major entries flat in nested lists of sizes dims.
func nest(flat []any, dims []int) any {
	if len(dims) == 0 {
		return flat[0]
	}
	out := make([]any, dims[0])
	step := len(flat) / max(dims[0], 1)
	for i := range out {
		out[i] = nest(flat[i*step:(i+1)*step], dims[1:])
	}
	return out
}

// fuzzInt evaluates a size: an int literal, an earlier int, or +, −, *
// and unary − of those.
func fuzzInt(e ir.Expr, ints map[*ir.Var]int64) (int64, bool) {
	switch e := e.(type) {
	case *ir.IntLit:
		return e.Value, true
	case *ir.VarRef:
		v, ok := ints[e.Var]
		return v, ok
	case *ir.Unary:
		v, ok := fuzzInt(e.X, ints)
		return -v, ok && e.Op == "-"
	case *ir.Binary:
		a, okA := fuzzInt(e.Left, ints)
		b, okB := fuzzInt(e.Right, ints)
		if !okA || !okB {
			return 0, false
		}
		switch e.Op {
		case "+":
			return a + b, true
		case "-":
			return a - b, true
		case "*":
			return a * b, true
		}
	}
	return 0, false
}

// fuzzReal evaluates a bound as fuzzInt does, real literals too; ok is
// false for none.
func fuzzReal(e ir.Expr, ints map[*ir.Var]int64) (float64, bool) {
	switch e := e.(type) {
	case nil:
		return 0, false
	case *ir.RealLit:
		return e.Value, true
	case *ir.Unary:
		if v, ok := fuzzReal(e.X, ints); ok && e.Op == "-" {
			return -v, true
		}
		return 0, false
	}
	v, ok := fuzzInt(e, ints)
	return float64(v), ok
}
