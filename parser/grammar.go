package parser

import (
	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// The participle grammar. These types are the concrete parse tree; they are
// converted into lang nodes by convert.go and never leave this package.

type pProgram struct {
	Blocks []*pBlock `parser:"@@*"`
}

type pBlock struct {
	Pos         lexer.Position
	Functions   bool       `parser:"( @\"functions\" \"{\""`
	Defs        []*pFunDef `parser:"  @@*"`
	Transformed string     `parser:"| ( \"transformed\" @(\"data\" | \"parameters\")"`
	Generated   bool       `parser:"  | @\"generated\" \"quantities\""`
	Name        string     `parser:"  | @(\"data\" | \"parameters\" | \"model\") )"`
	Stmts       []*pStmt   `parser:"  \"{\" @@* )"`
	EndPos      lexer.Position
	Close       string `parser:"@\"}\""`
}

// pFunDef is a function definition, or its forward declaration (no body).
type pFunDef struct {
	Pos    lexer.Position
	Return *pFunType    `parser:"@@"`
	Name   *pName       `parser:"@@ \"(\""`
	Params []*pFunParam `parser:"( @@ ( \",\" @@ )* )? \")\""`
	Body   *pBlockStmt  `parser:"( @@ | \";\" )"`
}

type pFunParam struct {
	Pos  lexer.Position
	Data bool      `parser:"@\"data\"?"`
	Type *pFunType `parser:"@@"`
	Name *pName    `parser:"@@"`
}

// pFunType is an unsized type: array[,] real, vector, void, ...
type pFunType struct {
	Pos    lexer.Position
	Array  bool     `parser:"( @\"array\" \"[\""`
	Commas []string `parser:"  @\",\"* \"]\" )?"`
	Base   string   `parser:"@( \"void\" | \"int\" | \"real\" | \"vector\" | \"row_vector\" | \"matrix\" | \"complex\" | \"complex_vector\" | \"complex_row_vector\" | \"complex_matrix\" | \"tuple\" )"`
}

type pStmt struct {
	Pos      lexer.Position
	Decl     *pDecl      `parser:"  @@"`
	For      *pFor       `parser:"| @@"`
	While    *pWhile     `parser:"| @@"`
	If       *pIf        `parser:"| @@"`
	Block    *pBlockStmt `parser:"| @@"`
	Print    *pPrint     `parser:"| @@"`
	Break    bool        `parser:"| @\"break\" \";\""`
	Continue bool        `parser:"| @\"continue\" \";\""`
	Return   *pReturn    `parser:"| @@"`
	Empty    bool        `parser:"| @\";\""`
	Expr     *pExprStmt  `parser:"| @@"`
}

type pDecl struct {
	Type    *pType        `parser:"@@"`
	Name    *pName        `parser:"@@"`
	OldDims []*pIndexItem `parser:"( \"[\" @@ ( \",\" @@ )* \"]\" )?"`
	Init    *pExpr        `parser:"( \"=\" @@ )? \";\""`
}

type pName struct {
	Pos  lexer.Position
	Name string `parser:"@Ident"`
}

type pType struct {
	Pos         lexer.Position
	Array       bool     `parser:"( @\"array\""`
	ArrayBounds *pBounds `parser:"  @@?"`
	ArrayDims   []*pExpr `parser:"  \"[\" @@ ( \",\" @@ )* \"]\" )?"`
	Base        string   `parser:"@( \"int\" | \"real\" | \"vector\" | \"row_vector\" | \"matrix\" | \"simplex\" | \"unit_vector\" | \"ordered\" | \"positive_ordered\" | \"cholesky_factor_corr\" | \"cholesky_factor_cov\" | \"corr_matrix\" | \"cov_matrix\" | \"complex\" | \"complex_vector\" | \"complex_matrix\" | \"tuple\" )"`
	Bounds      *pBounds `parser:"@@?"`
	Sizes       []*pExpr `parser:"( \"[\" @@ ( \",\" @@ )* \"]\" )?"`
}

type pBounds struct {
	Pos   lexer.Position
	Items []*pBound `parser:"\"<\" @@ ( \",\" @@ )* \">\""`
}

type pBound struct {
	Pos   lexer.Position
	Name  string  `parser:"@Ident \"=\""`
	Value *pArith `parser:"@@"`
}

type pFor struct {
	Pos  lexer.Position
	Var  *pName `parser:"\"for\" \"(\" @@ \"in\""`
	Lo   *pExpr `parser:"@@"`
	Hi   *pExpr `parser:"( \":\" @@ )? \")\""`
	Body *pStmt `parser:"@@"`
}

type pWhile struct {
	Pos  lexer.Position
	Cond *pExpr `parser:"\"while\" \"(\" @@ \")\""`
	Body *pStmt `parser:"@@"`
}

type pIf struct {
	Pos  lexer.Position
	Cond *pExpr `parser:"\"if\" \"(\" @@ \")\""`
	Then *pStmt `parser:"@@"`
	Else *pStmt `parser:"( \"else\" @@ )?"`
}

type pBlockStmt struct {
	Pos   lexer.Position
	Stmts []*pStmt `parser:"\"{\" @@* \"}\""`
}

type pPrint struct {
	Pos  lexer.Position
	Kind string   `parser:"@( \"print\" | \"reject\" ) \"(\""`
	Args []*pExpr `parser:"( @@ ( \",\" @@ )* )? \")\" \";\""`
}

type pReturn struct {
	Pos   lexer.Position
	Value *pExpr `parser:"\"return\" @@? \";\""`
}

// pExprStmt is an assignment, a ~ statement, or a call used as a
// statement (no tail).
type pExprStmt struct {
	Pos    lexer.Position
	LHS    *pExpr       `parser:"@@"`
	Tilde  *pTilde      `parser:"( \"~\" @@"`
	Assign *pAssignTail `parser:"| @@ )?"`
	Semi   lexer.Token  `parser:"@\";\""` // its position, where ~ or an assignment may be missing
}

type pAssignTail struct {
	Pos lexer.Position
	Op  string `parser:"@( \"=\" | \"+=\" | \"-=\" | \"*=\" | \"/=\" | \".*=\" | \"./=\" )"`
	RHS *pExpr `parser:"@@"`
}

type pTilde struct {
	Pos   lexer.Position
	Dist  string  `parser:"@Ident \"(\""`
	Args  []*pArg `parser:"@@* \")\""`
	Trunc *pTrunc `parser:"@@?"`
}

type pTrunc struct {
	Pos lexer.Position
	Lo  *pExpr `parser:"\"T\" \"[\" @@?"`
	Hi  *pExpr `parser:"\",\" @@? \"]\""`
}

// ---- Expressions, loosest first ----

type pExpr struct {
	Pos  lexer.Position
	Cond *pBinary `parser:"@@"`
	Then *pExpr   `parser:"( \"?\" @@"`
	Else *pExpr   `parser:"  \":\" @@ )?"`
}

// pBinary is a flat sequence of operands and binary operators; the
// converter applies precedence and associativity (precedence climbing),
// which keeps the grammar shallow and the parser fast.
type pBinary struct {
	Head *pUnary   `parser:"@@"`
	Tail []*pBinOp `parser:"@@*"`
}

type pBinOp struct {
	Pos lexer.Position
	Op  string  `parser:"@( \"||\" | \"&&\" | \"==\" | \"!=\" | \"<=\" | \">=\" | \"<\" | \">\" | \"+\" | \"-\" | \"*\" | \"/\" | \"%/%\" | \"%\" | \"\\\\\" | \".*\" | \"./\" )"`
	X   *pUnary `parser:"@@"`
}

// pArith is the operand of a constraint such as <lower=...>: arithmetic
// only, so that the closing '>' is not read as a comparison.
type pArith struct {
	Head *pUnary     `parser:"@@"`
	Tail []*pArithOp `parser:"@@*"`
}

type pArithOp struct {
	Pos lexer.Position
	Op  string  `parser:"@( \"+\" | \"-\" | \"*\" | \"/\" | \"%/%\" | \"%\" | \"\\\\\" | \".*\" | \"./\" )"`
	X   *pUnary `parser:"@@"`
}

type pUnary struct {
	Pos lexer.Position
	Op  string  `parser:"( @( \"-\" | \"!\" | \"+\" )"`
	X   *pUnary `parser:"  @@ )"`
	Pow *pPow   `parser:"| @@"`
}

type pPow struct {
	Base *pPostfix `parser:"@@"`
	Exp  *pPowOp   `parser:"@@?"`
}

type pPowOp struct {
	Pos lexer.Position
	Op  string  `parser:"@( \"^\" | \".^\" )"`
	X   *pUnary `parser:"@@"`
}

type pPostfix struct {
	X   *pPrimary  `parser:"@@"`
	Ops []*pSuffix `parser:"@@*"`
}

type pSuffix struct {
	Pos       lexer.Position
	Index     []*pIndexItem `parser:"  \"[\" @@ ( \",\" @@ )* \"]\""`
	Transpose bool          `parser:"| @\"'\""`
}

type pIndexItem struct {
	Pos   lexer.Position
	Lo    *pExpr `parser:"@@?"`
	Colon bool   `parser:"( @\":\""`
	Hi    *pExpr `parser:"  @@? )?"`
}

type pPrimary struct {
	Pos    lexer.Position
	Real   *string  `parser:"  @Real"`
	Int    *string  `parser:"| @Int"`
	Str    *string  `parser:"| @String"`
	Call   *pCall   `parser:"| @@"`
	Ident  *string  `parser:"| @Ident"`
	Paren  *pExpr   `parser:"| \"(\" @@ \")\""`
	Array  []*pExpr `parser:"| \"{\" @@ ( \",\" @@ )* \"}\""`
	RowVec *pRowVec `parser:"| @@"`
}

type pRowVec struct {
	Pos   lexer.Position
	Elems []*pExpr `parser:"\"[\" ( @@ ( \",\" @@ )* )? \"]\""`
}

type pCall struct {
	Pos    lexer.Position
	Name   string  `parser:"@Ident \"(\""`
	Args   []*pArg `parser:"@@*"`
	EndPos lexer.Position
	Close  string `parser:"@\")\""`
}

type pArg struct {
	Pos   lexer.Position
	Sep   string `parser:"@( \",\" | \"|\" )?"`
	Name  *pName `parser:"( @@ \"=\" )?"`
	Value *pExpr `parser:"@@"`
}

// newGrammar builds the parser of a T (a whole program, a statement list,
// an expression or a function definition) with the language's lexer.
func newGrammar[T any]() (*participle.Parser[T], error) {
	return participle.Build[T](
		participle.Lexer(shmLexer),
		participle.Elide("Comment", "Whitespace"),
		participle.UseLookahead(2),
	)
}

// pStmtList is a sequence of statements, for interactive sessions.
type pStmtList struct {
	Stmts []*pStmt `parser:"@@*"`
}
