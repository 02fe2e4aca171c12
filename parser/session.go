package parser

import (
	"github.com/alecthomas/participle/v2"

	"github.com/shmlang/shm/lang"
)

// ParseStmts parses a sequence of statements, such as one line typed in
// an interactive session ("real x = mean(y); print(x);"). Errors carry
// positions within src.
func (p *Parser) ParseStmts(file, src string) ([]lang.Stmt, lang.ErrorList) {
	return parseFragment(p.stmts, file, src, func(c *converter, t *pStmtList) []lang.Stmt { return c.stmts(t.Stmts) })
}

// ParseExpr parses one expression, such as "mean(y)" typed in an
// interactive session.
func (p *Parser) ParseExpr(file, src string) (lang.Expr, lang.ErrorList) {
	return parseFragment(p.exprs, file, src, (*converter).expr)
}

// parseFragment parses src with grammar g and converts the tree.
func parseFragment[T, R any](g *participle.Parser[T], file, src string, convert func(*converter, *T) R) (R, lang.ErrorList) {
	var zero R
	source := lang.NewSource(file, src)
	if e := checkDepth(source, src); e != nil {
		return zero, lang.ErrorList{e}
	}
	tree, err := g.ParseString(file, src)
	if err != nil {
		e, _ := syntaxError(source, err, []byte(src))
		return zero, lang.ErrorList{e}
	}
	c := &converter{src: source}
	out := convert(c, tree)
	return out, c.errs
}
