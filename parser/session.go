package parser

import (
	"github.com/alecthomas/participle/v2"

	"github.com/shmlang/shm/lang"
)

// ParseStmts parses a sequence of statements, such as one line typed in
// an interactive session ("real x = mean(y); print(x);"). Errors carry
// positions within src.
func (p *Parser) ParseStmts(file, src string) ([]lang.Stmt, lang.ErrorList) {
	stmts, errs := parseFragment(p.stmts, p.maxTokens, file, src, func(c *converter, t *pStmtList) []lang.Stmt { return c.stmts(t.Stmts) })
	if len(errs) > 0 {
		// A function definition typed as a statement: say where
		// functions belong, rather than the syntax error.
		if _, ferrs := parseFragment(p.funDef, p.maxTokens, file, src, func(c *converter, d *pFunDef) *lang.FunDef { return c.funDef(d) }); len(ferrs) == 0 {
			source := lang.NewSource(file, src)
			return nil, lang.ErrorList{source.At(lang.Pos{Line: 1, Col: 1}, "functions are defined in a model's functions block; a session started on that model can call them")}
		}
	}
	return stmts, errs
}

// ParseExpr parses one expression, such as "mean(y)" typed in an
// interactive session.
func (p *Parser) ParseExpr(file, src string) (lang.Expr, lang.ErrorList) {
	return parseFragment(p.exprs, p.maxTokens, file, src, (*converter).expr)
}

// parseFragment parses src of at most maxTokens tokens with grammar g and
// converts the tree.
func parseFragment[T, R any](g *participle.Parser[T], maxTokens int, file, src string, convert func(*converter, *T) R) (R, lang.ErrorList) {
	var zero R
	source := lang.NewSource(file, src)
	lx, _, deep, err := lexChecked(source, file, src, maxTokens)
	if deep != nil {
		return zero, lang.ErrorList{deep}
	}
	var tree *T
	if err == nil {
		tree, err = g.ParseFromLexer(lx)
	}
	if err != nil {
		reparse := func(t []byte) error { return parseText(g, file, t) }
		e, _ := syntaxError(source, err, []byte(src), reparse)
		return zero, lang.ErrorList{e}
	}
	c := &converter{src: source}
	out := convert(c, tree)
	return out, c.errs
}
