package parser

import (
	"github.com/shmlang/shm/lang"
)

// ParseStmts parses a sequence of statements, such as one line typed in
// an interactive session ("real x = mean(y); print(x);"). Errors carry
// positions within src.
func ParseStmts(file, src string) ([]lang.Stmt, lang.ErrorList) {
	source := lang.NewSource(file, src)
	if e := checkNesting(source, src); e != nil {
		return nil, lang.ErrorList{e}
	}
	g, err := newStmtGrammar()
	if err != nil {
		return nil, lang.ErrorList{{File: file, Msg: err.Error()}}
	}
	tree, err := g.ParseString(file, src)
	if err != nil {
		e, _ := syntaxError(source, err, []byte(src))
		return nil, lang.ErrorList{e}
	}
	c := &converter{src: source}
	stmts := c.stmts(tree.Stmts)
	return stmts, c.errs
}

// ParseExpr parses one expression, such as "mean(y)" typed in an
// interactive session.
func ParseExpr(file, src string) (lang.Expr, lang.ErrorList) {
	source := lang.NewSource(file, src)
	if e := checkNesting(source, src); e != nil {
		return nil, lang.ErrorList{e}
	}
	g, err := newExprGrammar()
	if err != nil {
		return nil, lang.ErrorList{{File: file, Msg: err.Error()}}
	}
	tree, err := g.ParseString(file, src)
	if err != nil {
		e, _ := syntaxError(source, err, []byte(src))
		return nil, lang.ErrorList{e}
	}
	c := &converter{src: source}
	e := c.expr(tree)
	return e, c.errs
}
