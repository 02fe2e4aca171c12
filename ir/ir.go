package ir

import (
	"github.com/shmlang/shm/lang"
	"github.com/shmlang/shm/stdlib"
)

// Model is a checked program.
type Model struct {
	Name string // model name: the file name without extension
	File string
	// SourceSHA256 is the digest of the program's text (CheckSource),
	// which a chain's header records.
	SourceSHA256 string
	// Vars holds every variable of the program (block-level, local and
	// loop variables); Var.Slot indexes it.
	Vars []*Var
	// Data, Params, TransformedParams and Generated are the block-level
	// declarations of those blocks, in order.
	Data              []*Decl
	TransformedData   []Stmt
	Params            []*Decl
	TransformedParams []Stmt
	ModelBlock        []Stmt
	Generated         []Stmt
	// CRNs lists every crn(...) call; CRN.ID indexes it.
	CRNs []*CRN
	// Iterative lists the calls of built-ins with an iteration budget
	// (sinkhorn and its companions: an iters = ... argument) whose value
	// can enter the log density: those of functions, transformed
	// parameters and the model block that depend on parameters, in
	// source order. The post-sampling report checks their budgets.
	Iterative []*Call
	// Functions are the user-defined functions (functions block).
	Functions []*Function
	// Source is the checked syntax tree.
	Source *lang.Program
}

// Var is a variable.
type Var struct {
	Slot  int
	Name  string
	Pos   lang.Pos
	Type  lang.Type
	Block lang.BlockKind // the block it is declared in
	// Local is true for variables declared in a nested statement block,
	// in the model block, or as loop variables.
	Local bool
	Loop  bool
	// Arg is true for the arguments of a user-defined function, whose
	// frame slots are the first of a call's frame.
	Arg bool
	// Data is true when the variable's value never depends on parameters.
	Data bool
	Decl *Decl // nil for loop variables
}

// Decl is a variable declaration with its sizes, constraints and initial
// value, all as checked expressions.
type Decl struct {
	Pos        lang.Pos
	Var        *Var
	ArraySizes []Expr
	Sizes      []Expr // vector: [n]; matrix: [rows, cols]
	Lower      Expr
	Upper      Expr
	Offset     Expr
	Multiplier Expr
	// Special is the constrained type (simplex, cov_matrix, ...), or
	// lang.NoSpecial; its values are vectors or matrices with the sizes
	// of Sizes.
	Special lang.Special
	Init    Expr
	// SizesFromValue is set for session variables declared by assignment
	// ("x = mean(y)" in the REPL): their sizes are those of the value.
	SizesFromValue bool
	// TypeText is the declared type as written, normalized ("array[N]
	// vector<lower=0>[K]"); ShapeText is the same without the constraint
	// ("array[N] vector[K]") and ConstraintText the constraint alone
	// ("<lower=0>", or "" when there is none).
	TypeText, ShapeText, ConstraintText string
}

// Constrained reports whether the declaration has a constraint.
func (d *Decl) Constrained() bool {
	return d.Lower != nil || d.Upper != nil || d.Offset != nil || d.Multiplier != nil || d.Special != lang.NoSpecial
}

// ---- Statements ----

// Stmt is a checked statement.
type Stmt interface {
	Position() lang.Pos
	stmtNode()
}

// DeclStmt declares a local or block-level variable.
type DeclStmt struct{ Decl *Decl }

// Assign is lhs op= rhs.
type Assign struct {
	Pos     lang.Pos
	Var     *Var
	Indices []*IndexItem // empty when the whole variable is assigned
	LHSType lang.Type    // type of the assigned part
	Op      string       // "=", "+=", "-=", "*=", "/=", ".*=", "./="
	RHS     Expr
}

// Tilde is lhs ~ dist(args); it adds Func(lhs | args) to the target,
// dropping constants.
type Tilde struct {
	Pos   lang.Pos
	LHS   Expr
	Func  *stdlib.Func // the _lpdf or _lpmf
	Sig   *stdlib.Sig
	Args  []Expr // the distribution's parameters (without lhs)
	Trunc *Truncation
}

// Truncation is T[lo, hi]; a nil bound is absent.
type Truncation struct {
	Pos    lang.Pos
	Lo, Hi Expr
	LCDF   *stdlib.Func // the family's _lcdf
	LCCDF  *stdlib.Func // the family's _lccdf
}

// TargetAdd is target += expr.
type TargetAdd struct {
	Pos  lang.Pos
	Expr Expr
}

// For is for (Var in Lo:Hi) Body.
type For struct {
	Pos    lang.Pos
	Var    *Var
	Lo, Hi Expr
	Body   Stmt
}

// ForEach is for (Var in Container) Body.
type ForEach struct {
	Pos       lang.Pos
	Var       *Var
	Container Expr
	Body      Stmt
}

// While is while (Cond) Body.
type While struct {
	Pos  lang.Pos
	Cond Expr
	Body Stmt
}

// If is if (Cond) Then else Else; Else may be nil.
type If struct {
	Pos  lang.Pos
	Cond Expr
	Then Stmt
	Else Stmt
}

// Block is a nested block with its own scope.
type Block struct {
	Pos   lang.Pos
	Stmts []Stmt
}

// Print is print(args).
type Print struct {
	Pos  lang.Pos
	Args []Expr
}

// Reject is reject(args).
type Reject struct {
	Pos  lang.Pos
	Args []Expr
}

// Break is break.
type Break struct{ Pos lang.Pos }

// Continue is continue.
type Continue struct{ Pos lang.Pos }

func (s *DeclStmt) Position() lang.Pos  { return s.Decl.Pos }
func (s *Assign) Position() lang.Pos    { return s.Pos }
func (s *Tilde) Position() lang.Pos     { return s.Pos }
func (s *TargetAdd) Position() lang.Pos { return s.Pos }
func (s *For) Position() lang.Pos       { return s.Pos }
func (s *ForEach) Position() lang.Pos   { return s.Pos }
func (s *While) Position() lang.Pos     { return s.Pos }
func (s *If) Position() lang.Pos        { return s.Pos }
func (s *Block) Position() lang.Pos     { return s.Pos }
func (s *Print) Position() lang.Pos     { return s.Pos }
func (s *Reject) Position() lang.Pos    { return s.Pos }
func (s *Break) Position() lang.Pos     { return s.Pos }
func (s *Continue) Position() lang.Pos  { return s.Pos }

func (*DeclStmt) stmtNode()  {}
func (*Assign) stmtNode()    {}
func (*Tilde) stmtNode()     {}
func (*TargetAdd) stmtNode() {}
func (*For) stmtNode()       {}
func (*ForEach) stmtNode()   {}
func (*While) stmtNode()     {}
func (*If) stmtNode()        {}
func (*Block) stmtNode()     {}
func (*Print) stmtNode()     {}
func (*Reject) stmtNode()    {}
func (*Break) stmtNode()     {}
func (*Continue) stmtNode()  {}

// ---- Expressions ----

// Expr is a checked expression.
type Expr interface {
	Position() lang.Pos
	// Type is the static type.
	Type() lang.Type
	// IsData reports whether the value never depends on parameters.
	IsData() bool
	// Shape returns the statically known sizes: array sizes, then the
	// vector length or matrix rows and columns; -1 marks an unknown size
	// and nil means nothing is known.
	Shape() []int
}

type info struct {
	pos   lang.Pos
	typ   lang.Type
	data  bool
	shape []int
}

func (i *info) Position() lang.Pos { return i.pos }
func (i *info) Type() lang.Type    { return i.typ }
func (i *info) IsData() bool       { return i.data }
func (i *info) Shape() []int       { return i.shape }

// IntLit is an int literal.
type IntLit struct {
	info
	Value int64
}

// RealLit is a real literal.
type RealLit struct {
	info
	Value float64
}

// StringLit is a string literal.
type StringLit struct {
	info
	Value string
}

// VarRef reads a variable.
type VarRef struct {
	info
	Var *Var
}

// Call calls a built-in. Named holds the named arguments in the order of
// Func.Named, nil where not given.
type Call struct {
	info
	Func  *stdlib.Func
	Sig   *stdlib.Sig
	Args  []Expr
	Named []Expr
}

// CRN is crn(K, Body, seed = Seed): the average of Body over K fixed
// random streams.
type CRN struct {
	info
	ID   int
	K    Expr
	Body Expr
	Seed Expr // nil: derived from the run's seed
}

// IndexKind says what one index selects.
type IndexKind int

// Index kinds.
const (
	IndexSingle IndexKind = iota // one element: drops a dimension
	IndexMulti                   // an array[] int of positions
	IndexRange                   // lo:hi with either bound optional
	IndexAll                     // every position
)

// IndexItem is one checked index.
type IndexItem struct {
	Pos    lang.Pos
	Kind   IndexKind
	Lo, Hi Expr
}

// Index is X[items].
type Index struct {
	info
	X     Expr
	Items []*IndexItem
}

// Binary is Left Op Right.
type Binary struct {
	info
	Op          string
	Left, Right Expr
}

// Unary is Op X.
type Unary struct {
	info
	Op string
	X  Expr
}

// Ternary is Cond ? Then : Else.
type Ternary struct {
	info
	Cond, Then, Else Expr
}

// Transpose is X'.
type Transpose struct {
	info
	X Expr
}

// ArrayLit is {elems}.
type ArrayLit struct {
	info
	Elems []Expr
}

// RowVectorLit is [elems]: a row_vector of scalars or a matrix of
// row_vectors.
type RowVectorLit struct {
	info
	Elems []Expr
}
