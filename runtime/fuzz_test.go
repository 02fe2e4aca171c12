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
		// The interpreter, plans alone, each loop strategy alone on
		// plans, and all of them (the default). Each density evaluates
		// twice at the point: the second replays the loops the first
		// recorded, and must give the same bits.
		type outcome struct {
			lp    float64
			grad  []float64
			err   error
			moved bool // lifted or hoisted loops ran: terms summed in another order
		}
		outs := make([]outcome, len(fuzzStrategies))
		for k, st := range fuzzStrategies {
			d, err := bm.NewDensity()
			if err != nil {
				return
			}
			st.apply(d)
			for pass := range 2 {
				grad := make([]float64, len(theta))
				lp, err := d.LogDensityGrad(theta, grad)
				if pass == 0 {
					outs[k] = outcome{lp: lp, grad: grad, err: err, moved: d.ev.lifted+d.ev.hoisted > 0}
					continue
				}
				first := outs[k]
				if ctx.Err() != nil {
					return // too slow to compare
				}
				if (err == nil) != (first.err == nil) || err != nil && err.Error() != first.err.Error() {
					t.Fatalf("%s: errors of the first and second evaluation: %v, then %v", st, first.err, err)
				}
				if err != nil {
					continue
				}
				if !sameBits(lp, first.lp) {
					t.Errorf("%s: log density %.17g, then %.17g at the same point (replayed: %d)", st, first.lp, lp, d.ev.replayed)
				}
				for i := range grad {
					if !sameBits(grad[i], first.grad[i]) {
						t.Errorf("%s: gradient %d %.17g, then %.17g at the same point (replayed: %d)", st, i, first.grad[i], grad[i], d.ev.replayed)
					}
				}
			}
		}
		for _, o := range outs {
			if err := o.err; err != nil && (ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) ||
				strings.Contains(err.Error(), "one evaluation may hold")) {
				return
			}
		}
		ref := outs[0] // interpreted
		for k, o := range outs[1:] {
			st := fuzzStrategies[k+1]
			if (o.err == nil) != (ref.err == nil) || o.err != nil && o.err.Error() != ref.err.Error() {
				t.Fatalf("errors: %s %v, interpreted %v", st, o.err, ref.err)
			}
			if o.err != nil {
				continue
			}
			// Lifted and hoisted loops sum in another order
			// (TestLiftedLoops); the others agree bitwise.
			agree := sameBits
			if o.moved {
				agree = near
			}
			if !agree(o.lp, ref.lp) {
				t.Errorf("log density: %s %.17g, interpreted %.17g", st, o.lp, ref.lp)
			}
			for i := range o.grad {
				if !agree(o.grad[i], ref.grad[i]) {
					t.Errorf("gradient %d: %s %.17g, interpreted %.17g", i, st, o.grad[i], ref.grad[i])
				}
			}
		}
	})
}

// fuzzStrategies are FuzzDensity's evaluations: the interpreter first (the
// reference), plans alone, each loop strategy alone on plans, all.
var fuzzStrategies = []strategies{
	{},
	{plans: true},
	{plans: true, lift: true},
	{plans: true, hoist: true},
	{plans: true, replay: true},
	allStrategies,
}

// strategies are the ways of evaluating a model a test turns on: plans
// (compiled statements and expressions, else the interpreter), and on
// plans lifted, hoisted and replayed loops, each on its own.
type strategies struct{ plans, lift, hoist, replay bool }

// allStrategies is the default evaluation.
var allStrategies = strategies{plans: true, lift: true, hoist: true, replay: true}

// apply sets d's evaluator to the strategies, before its first evaluation
// (the plans compile with the replayed loops then).
func (s strategies) apply(d *Density) {
	d.ev.noPlans, d.ev.noLift, d.ev.noHoist = !s.plans, !s.lift, !s.hoist
	if !s.replay {
		d.ev.replays = nil
	}
}

func (s strategies) String() string {
	if !s.plans {
		return "interpreted"
	}
	name := "planned"
	for _, x := range []struct {
		on   bool
		name string
	}{{s.lift, "lifted"}, {s.hoist, "hoisted"}, {s.replay, "replayed"}} {
		if x.on {
			name += "+" + x.name
		}
	}
	return name
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
