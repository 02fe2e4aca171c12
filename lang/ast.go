package lang

// Node is any syntax tree node.
type Node interface {
	Position() Pos
}

// Expr is an expression node.
type Expr interface {
	Node
	exprNode()
}

// Stmt is a statement node.
type Stmt interface {
	Node
	stmtNode()
}

// BlockKind identifies a program block.
type BlockKind int

// The program blocks, in the order they must appear.
const (
	FunctionsBlock BlockKind = iota
	DataBlock
	TransformedDataBlock
	ParametersBlock
	TransformedParametersBlock
	ModelBlock
	GeneratedQuantitiesBlock
	numBlocks
)

// NumBlocks is the number of block kinds.
const NumBlocks = int(numBlocks)

var blockNames = [...]string{
	FunctionsBlock:             "functions",
	DataBlock:                  "data",
	TransformedDataBlock:       "transformed data",
	ParametersBlock:            "parameters",
	TransformedParametersBlock: "transformed parameters",
	ModelBlock:                 "model",
	GeneratedQuantitiesBlock:   "generated quantities",
}

func (k BlockKind) String() string {
	if k < 0 || int(k) >= len(blockNames) {
		return "<bad block>"
	}
	return blockNames[k]
}

// Program is a whole .shm file.
type Program struct {
	File string
	// Functions are the definitions and forward declarations of the
	// functions block, in source order.
	Functions []*FunDef
	Blocks    []*Block // in source order; the functions block is not one
}

// FunDef is a user-defined function of the functions block, or its
// forward declaration (Body nil).
type FunDef struct {
	Pos     Pos
	Return  Type // VoidType for a function that returns nothing
	Name    string
	NamePos Pos
	Params  []*FunParam
	Body    *BlockStmt
}

// Position implements Node.
func (f *FunDef) Position() Pos { return f.Pos }

// FunParam is one argument of a user-defined function: an unsized type,
// with data set when it was declared data-only.
type FunParam struct {
	Pos  Pos
	Data bool
	Type Type
	Name string
}

// Block returns the block of the given kind, or nil.
func (p *Program) Block(kind BlockKind) *Block {
	for _, b := range p.Blocks {
		if b.Kind == kind {
			return b
		}
	}
	return nil
}

// Block is one top-level block.
type Block struct {
	Pos   Pos
	Kind  BlockKind
	Stmts []Stmt
	End   Pos // position of the closing brace
}

// Position implements Node.
func (b *Block) Position() Pos { return b.Pos }

// ---- Types in declarations ----

// TypeExpr is a declared type with its sizes and constraints, such as
// array[N] vector<lower=0>[K].
type TypeExpr struct {
	Pos       Pos
	Base      Base
	ArraySize []Expr // sizes of the array dimensions, outermost first
	Size      []Expr // vector/row_vector: one size; matrix: rows, cols
	// Special is the constrained type (simplex, cov_matrix, ...), whose
	// Base is vector or matrix and whose Size is the value's (a
	// cov_matrix[K] has Size [K, K]); SpecialSize is the size as written.
	Special     Special
	SpecialSize []Expr
	Bounds      *Bounds
	// ArrayBounds is set when a constraint was written on the array
	// keyword (array<lower=0>[N] real), which is an error the checker
	// reports.
	ArrayBounds *Bounds
}

// Position implements Node.
func (t *TypeExpr) Position() Pos { return t.Pos }

// Type returns the unsized type.
func (t *TypeExpr) Type() Type { return Type{Base: t.Base, Dims: len(t.ArraySize)} }

// Bounds holds the constraint of a declaration: <lower=L, upper=U> or
// <offset=O, multiplier=M>. Absent parts are nil.
type Bounds struct {
	Pos        Pos
	Lower      Expr
	Upper      Expr
	Offset     Expr
	Multiplier Expr
}

// ---- Statements ----

// VarDecl declares a variable, optionally with an initial value.
type VarDecl struct {
	Pos  Pos
	Type *TypeExpr
	Name string
	// NamePos is the position of the name.
	NamePos Pos
	Init    Expr
}

// Assign is x = e, or a compound assignment x op= e.
type Assign struct {
	Pos Pos
	LHS Expr   // an *Ident, possibly inside *Index nodes
	Op  string // "=", "+=", "-=", "*=", "/=", ".*=", "./="
	RHS Expr
}

// Tilde is a sampling statement: lhs ~ dist(args) T[lo, hi].
type Tilde struct {
	Pos     Pos
	LHS     Expr
	Dist    string
	DistPos Pos
	Args    []Expr
	Trunc   *Truncation
}

// Truncation is T[lo, hi]; either bound may be nil.
type Truncation struct {
	Pos    Pos
	Lo, Hi Expr
}

// TargetAdd is target += e.
type TargetAdd struct {
	Pos  Pos
	Expr Expr
}

// For is for (v in lo:hi) body.
type For struct {
	Pos    Pos
	Var    string
	VarPos Pos
	Lo, Hi Expr
	Body   Stmt
}

// ForEach is for (v in container) body.
type ForEach struct {
	Pos       Pos
	Var       string
	VarPos    Pos
	Container Expr
	Body      Stmt
}

// While is while (cond) body.
type While struct {
	Pos  Pos
	Cond Expr
	Body Stmt
}

// If is if (cond) then else els; Else may be nil.
type If struct {
	Pos  Pos
	Cond Expr
	Then Stmt
	Else Stmt
}

// BlockStmt is { stmts } with its own scope.
type BlockStmt struct {
	Pos   Pos
	Stmts []Stmt
}

// Print is print(args).
type Print struct {
	Pos  Pos
	Args []Expr
}

// Reject is reject(args).
type Reject struct {
	Pos  Pos
	Args []Expr
}

// Break is break.
type Break struct{ Pos Pos }

// Return is return value; or, in a void function, return;. Value is nil
// in the second form.
type Return struct {
	Pos   Pos
	Value Expr
}

// CallStmt is a call used as a statement (of a void function).
type CallStmt struct {
	Pos  Pos
	Call *Call
}

// Continue is continue.
type Continue struct{ Pos Pos }

func (s *VarDecl) Position() Pos   { return s.Pos }
func (s *Assign) Position() Pos    { return s.Pos }
func (s *Tilde) Position() Pos     { return s.Pos }
func (s *TargetAdd) Position() Pos { return s.Pos }
func (s *For) Position() Pos       { return s.Pos }
func (s *ForEach) Position() Pos   { return s.Pos }
func (s *While) Position() Pos     { return s.Pos }
func (s *If) Position() Pos        { return s.Pos }
func (s *BlockStmt) Position() Pos { return s.Pos }
func (s *Print) Position() Pos     { return s.Pos }
func (s *Reject) Position() Pos    { return s.Pos }
func (s *Break) Position() Pos     { return s.Pos }
func (s *Continue) Position() Pos  { return s.Pos }
func (s *Return) Position() Pos    { return s.Pos }
func (s *CallStmt) Position() Pos  { return s.Pos }

func (*VarDecl) stmtNode()   {}
func (*Assign) stmtNode()    {}
func (*Tilde) stmtNode()     {}
func (*TargetAdd) stmtNode() {}
func (*For) stmtNode()       {}
func (*ForEach) stmtNode()   {}
func (*While) stmtNode()     {}
func (*If) stmtNode()        {}
func (*BlockStmt) stmtNode() {}
func (*Print) stmtNode()     {}
func (*Reject) stmtNode()    {}
func (*Break) stmtNode()     {}
func (*Continue) stmtNode()  {}
func (*Return) stmtNode()    {}
func (*CallStmt) stmtNode()  {}

// ---- Expressions ----

// IntLit is an integer literal.
type IntLit struct {
	Pos   Pos
	Value int64
	Text  string
}

// RealLit is a real literal.
type RealLit struct {
	Pos   Pos
	Value float64
	Text  string
}

// StringLit is a string literal (print, reject and named arguments only).
type StringLit struct {
	Pos   Pos
	Value string
}

// Ident is a variable reference.
type Ident struct {
	Pos  Pos
	Name string
}

// Call is a function call f(args, name = value, ...). Conditional is true
// when the first argument was separated from the rest by "|", as in
// normal_lpdf(y | mu, sigma).
type Call struct {
	Pos         Pos
	Name        string
	Args        []Expr
	Named       []*NamedArg
	Conditional bool
	End         Pos // position of the closing parenthesis
}

// NamedArg is name = value inside a call's argument list.
type NamedArg struct {
	Pos   Pos
	Name  string
	Value Expr
}

// IndexKind says what one index selects.
type IndexKind int

// Index kinds. A Single index whose expression has type array[] int is a
// multi-index; the checker decides that from its type.
const (
	IndexSingle IndexKind = iota // a[i]
	IndexRange                   // a[i:j], a[i:], a[:j]
	IndexAll                     // a[:] or an omitted index a[, j]
)

// IndexItem is one index inside brackets.
type IndexItem struct {
	Pos  Pos
	Kind IndexKind
	Lo   Expr // IndexSingle: the index; IndexRange: the lower bound or nil
	Hi   Expr // IndexRange: the upper bound or nil
}

// Index is x[items].
type Index struct {
	Pos   Pos
	X     Expr
	Items []*IndexItem
}

// Binary is l op r.
type Binary struct {
	Pos   Pos // position of the operator
	Op    string
	Left  Expr
	Right Expr
}

// Unary is op x for op in "-", "!", "+".
type Unary struct {
	Pos Pos
	Op  string
	X   Expr
}

// Ternary is cond ? then : els.
type Ternary struct {
	Pos              Pos
	Cond, Then, Else Expr
}

// Transpose is x'.
type Transpose struct {
	Pos Pos // position of the quote
	X   Expr
}

// ArrayLit is {a, b, ...}.
type ArrayLit struct {
	Pos   Pos
	Elems []Expr
}

// RowVectorLit is [a, b, ...].
type RowVectorLit struct {
	Pos   Pos
	Elems []Expr
}

// Paren is (x); it is kept so that positions and printing stay faithful.
type Paren struct {
	Pos Pos
	X   Expr
}

func (e *IntLit) Position() Pos       { return e.Pos }
func (e *RealLit) Position() Pos      { return e.Pos }
func (e *StringLit) Position() Pos    { return e.Pos }
func (e *Ident) Position() Pos        { return e.Pos }
func (e *Call) Position() Pos         { return e.Pos }
func (e *Index) Position() Pos        { return e.Pos }
func (e *Binary) Position() Pos       { return e.Pos }
func (e *Unary) Position() Pos        { return e.Pos }
func (e *Ternary) Position() Pos      { return e.Pos }
func (e *Transpose) Position() Pos    { return e.Pos }
func (e *ArrayLit) Position() Pos     { return e.Pos }
func (e *RowVectorLit) Position() Pos { return e.Pos }
func (e *Paren) Position() Pos        { return e.Pos }

func (*IntLit) exprNode()       {}
func (*RealLit) exprNode()      {}
func (*StringLit) exprNode()    {}
func (*Ident) exprNode()        {}
func (*Call) exprNode()         {}
func (*Index) exprNode()        {}
func (*Binary) exprNode()       {}
func (*Unary) exprNode()        {}
func (*Ternary) exprNode()      {}
func (*Transpose) exprNode()    {}
func (*ArrayLit) exprNode()     {}
func (*RowVectorLit) exprNode() {}
func (*Paren) exprNode()        {}
