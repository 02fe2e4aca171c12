package stdlib

import (
	"sort"
	"strings"

	"github.com/shmlang/shm/lang"
)

// Class is a set of argument types a parameter accepts.
type Class int

// The parameter classes.
const (
	Exact     Class = iota // exactly Param.Type, with int promoted to real
	Reals                  // int, real, vector, row_vector, array[] int, array[] real
	Ints                   // int, array[] int
	Vectors                // vector, row_vector, array[] vector, array[] row_vector
	Numeric                // any int- or real-based type, arrays included
	Container              // vector, row_vector, array[] int, array[] real
	Points                 // vector, matrix, array[] vector: support points for sinkhorn
	Linalg                 // vector, row_vector, matrix
)

// Param is one positional parameter of a signature.
type Param struct {
	Name  string
	Class Class
	Type  lang.Type // for Exact
	// Data is true when the argument must not depend on parameters.
	Data bool
}

// Describe renders the types the parameter accepts, for error messages.
func (p Param) Describe() string {
	switch p.Class {
	case Exact:
		return p.Type.String()
	case Reals:
		return "reals (int, real, vector, row_vector, array[] int or array[] real)"
	case Ints:
		return "ints (int or array[] int)"
	case Vectors:
		return "vectors (vector, row_vector or arrays of them)"
	case Numeric:
		return "a numeric type"
	case Container:
		return "vector, row_vector, array[] int or array[] real"
	case Points:
		return "points (vector, matrix or array[] vector)"
	case Linalg:
		return "vector, row_vector or matrix"
	}
	return "?"
}

// Accepts reports whether an argument of type t matches the parameter, and
// at what cost (0 for an exact match, 1 when an int is promoted).
func (p Param) Accepts(t lang.Type) (cost int, ok bool) {
	switch p.Class {
	case Exact:
		if p.Type == t {
			return 0, true
		}
		if p.Type.AssignableFrom(t) {
			return 1, true
		}
		return 0, false
	case Reals:
		return 0, (t.Dims == 0 && t.Base != lang.Matrix && t.IsNumeric()) ||
			(t.Dims == 1 && t.Base.IsScalar())
	case Ints:
		return 0, t.Base == lang.Int && t.Dims <= 1
	case Vectors:
		return 0, (t.Base == lang.Vector || t.Base == lang.RowVector) && t.Dims <= 1
	case Numeric:
		return 0, t.IsNumeric()
	case Container:
		return 0, (t.Dims == 0 && (t.Base == lang.Vector || t.Base == lang.RowVector)) ||
			(t.Dims == 1 && t.Base.IsScalar())
	case Points:
		return 0, (t.Dims == 0 && (t.Base == lang.Vector || t.Base == lang.Matrix)) ||
			(t.Dims == 1 && t.Base == lang.Vector)
	case Linalg:
		return 0, t.Dims == 0 && t.Base.IsLinalg()
	}
	return 0, false
}

// ResultFunc computes a signature's result type from its argument types;
// it returns false when the combination is not allowed (for example two
// containers of different shapes in an elementwise function).
type ResultFunc func(args []lang.Type) (lang.Type, bool)

// Sig is one signature of a built-in.
type Sig struct {
	Params []Param
	Result ResultFunc
	// ResultDoc describes the result for listings ("real", "like x").
	ResultDoc string
}

// NamedParam is a named argument of a built-in (an shm extension).
type NamedParam struct {
	Name     string
	Type     lang.Type
	Also     []lang.Type // other types it accepts (sinkhorn's channels)
	Data     bool        // must be data
	Required bool        // must be given
	Choices  []string    // for string parameters: the accepted values
	Default  string      // documentation of the default
}

// Accepts reports whether the parameter accepts an argument of type t.
func (p NamedParam) Accepts(t lang.Type) bool {
	if p.Type.AssignableFrom(t) {
		return true
	}
	for _, a := range p.Also {
		if a.AssignableFrom(t) {
			return true
		}
	}
	return false
}

// Describe renders the types the parameter accepts, for error messages.
func (p NamedParam) Describe() string {
	s := p.Type.String()
	for _, a := range p.Also {
		s += " or " + a.String()
	}
	return s
}

// Kind says what sort of built-in a function is.
type Kind int

// Kinds of built-ins.
const (
	MathFunc  Kind = iota
	Density        // _lpdf, _lpmf, _lupdf, _lupmf, _lcdf, _lccdf, _cdf
	RNG            // _rng
	Primitive      // the paper's primitives: sinkhorn and companions
	CRN            // crn(K, expr)
)

// Func is a built-in function with all its signatures.
type Func struct {
	Name  string
	Kind  Kind
	Sigs  []Sig
	Named []NamedParam
	// Family is the distribution family of a density or RNG ("normal").
	Family *Family
	// Suffix is the distribution suffix ("_lpdf", "_rng", ...), if any.
	Suffix string
	// ModelOnly is true for functions only allowed in the model block
	// (target()).
	ModelOnly bool
}

// NamedParam returns the named parameter called name, or nil.
func (f *Func) NamedParam(name string) *NamedParam {
	for i := range f.Named {
		if f.Named[i].Name == name {
			return &f.Named[i]
		}
	}
	return nil
}

// NamedList returns the accepted named parameters as "a, b, c".
func (f *Func) NamedList() string {
	names := make([]string, len(f.Named))
	for i, p := range f.Named {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// Arity returns the sorted, distinct numbers of positional arguments the
// function accepts.
func (f *Func) Arity() []int {
	seen := map[int]bool{}
	var out []int
	for _, s := range f.Sigs {
		if !seen[len(s.Params)] {
			seen[len(s.Params)] = true
			out = append(out, len(s.Params))
		}
	}
	sort.Ints(out)
	return out
}

// Table is the set of built-ins.
type Table struct {
	funcs    map[string]*Func
	families map[string]*Family
}

// Lookup returns the built-in called name, or nil.
func (t *Table) Lookup(name string) *Func { return t.funcs[name] }

// Family returns the distribution family called name, or nil.
func (t *Table) Family(name string) *Family { return t.families[name] }

// Names returns every built-in name, sorted.
func (t *Table) Names() []string {
	names := make([]string, 0, len(t.funcs))
	for n := range t.funcs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// FamilyNames returns every distribution family name, sorted.
func (t *Table) FamilyNames() []string {
	names := make([]string, 0, len(t.families))
	for n := range t.families {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (t *Table) add(f *Func) {
	if old := t.funcs[f.Name]; old != nil {
		old.Sigs = append(old.Sigs, f.Sigs...)
		return
	}
	t.funcs[f.Name] = f
}
