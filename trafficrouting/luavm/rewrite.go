package luavm

import (
	"fmt"

	"github.com/yuin/gopher-lua/ast"
)

// concatLocal names the local through which every `..` is routed. The parentheses make it unreachable from
// script source, so a script can neither call around the guard nor shadow it.
const concatLocal = "(concat guard)"

// maxSyntaxDepth bounds statement and expression nesting; gopher-lua compiles recursively, so a deeply nested
// script would otherwise take hundreds of MiB of goroutine stack (Lua itself stops at 200 levels).
const maxSyntaxDepth = 500

// guardChunk rewrites every concatenation in chunk into a call of the size-checking concat function, which
// the chunk receives as its first vararg, and rejects chunks nested too deeply.
func guardChunk(chunk []ast.Stmt) ([]ast.Stmt, error) {
	r := &rewriter{}
	r.stmts(chunk)
	if r.err != nil {
		return nil, r.err
	}
	bind := &ast.LocalAssignStmt{Names: []string{concatLocal}, Exprs: []ast.Expr{&ast.Comma3Expr{}}}
	return append([]ast.Stmt{bind}, chunk...), nil
}

type rewriter struct {
	depth int
	err   error
}

func (r *rewriter) enter(n ast.PositionHolder) bool {
	r.depth++
	if r.depth > maxSyntaxDepth && r.err == nil {
		r.err = fmt.Errorf("%s:%d: the script nests more than %d levels", chunkName, n.Line(), maxSyntaxDepth)
	}
	return r.err == nil
}

func (r *rewriter) stmts(list []ast.Stmt) {
	for _, s := range list {
		r.stmt(s)
	}
}

func (r *rewriter) exprs(list []ast.Expr) {
	for i := range list {
		list[i] = r.expr(list[i])
	}
}

func (r *rewriter) stmt(s ast.Stmt) {
	defer func() { r.depth-- }()
	if !r.enter(s) {
		return
	}
	switch s := s.(type) {
	case *ast.AssignStmt:
		r.exprs(s.Lhs)
		r.exprs(s.Rhs)
	case *ast.LocalAssignStmt:
		r.exprs(s.Exprs)
	case *ast.FuncCallStmt:
		s.Expr = r.expr(s.Expr)
	case *ast.DoBlockStmt:
		r.stmts(s.Stmts)
	case *ast.WhileStmt:
		s.Condition = r.expr(s.Condition)
		r.stmts(s.Stmts)
	case *ast.RepeatStmt:
		s.Condition = r.expr(s.Condition)
		r.stmts(s.Stmts)
	case *ast.IfStmt:
		s.Condition = r.expr(s.Condition)
		r.stmts(s.Then)
		r.stmts(s.Else)
	default:
		r.loopOrFunc(s)
	}
}

func (r *rewriter) loopOrFunc(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.NumberForStmt:
		s.Init, s.Limit, s.Step = r.expr(s.Init), r.expr(s.Limit), r.expr(s.Step)
		r.stmts(s.Stmts)
	case *ast.GenericForStmt:
		r.exprs(s.Exprs)
		r.stmts(s.Stmts)
	case *ast.FuncDefStmt:
		s.Func = r.expr(s.Func).(*ast.FunctionExpr)
	case *ast.ReturnStmt:
		r.exprs(s.Exprs)
	}
}

func (r *rewriter) expr(e ast.Expr) ast.Expr {
	if e == nil {
		return nil
	}
	defer func() { r.depth-- }()
	if !r.enter(e) {
		return e
	}
	switch e := e.(type) {
	case *ast.StringConcatOpExpr:
		return r.concat(e)
	case *ast.AttrGetExpr:
		e.Object, e.Key = r.expr(e.Object), r.expr(e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			f.Key, f.Value = r.expr(f.Key), r.expr(f.Value)
		}
	case *ast.FuncCallExpr:
		e.Func, e.Receiver = r.expr(e.Func), r.expr(e.Receiver)
		r.exprs(e.Args)
	case *ast.FunctionExpr:
		r.stmts(e.Stmts)
	default:
		r.operator(e)
	}
	return e
}

func (r *rewriter) operator(e ast.Expr) {
	switch e := e.(type) {
	case *ast.LogicalOpExpr:
		e.Lhs, e.Rhs = r.expr(e.Lhs), r.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		e.Lhs, e.Rhs = r.expr(e.Lhs), r.expr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		e.Lhs, e.Rhs = r.expr(e.Lhs), r.expr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		e.Expr = r.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		e.Expr = r.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		e.Expr = r.expr(e.Expr)
	}
}

// concat turns a right-nested chain a .. b .. c into one guard call with the operands in order, which keeps
// Lua's evaluation order and lets the guard join a run of strings in one allocation.
func (r *rewriter) concat(e *ast.StringConcatOpExpr) ast.Expr {
	var args []ast.Expr
	var cur ast.Expr = e
	for {
		c, ok := cur.(*ast.StringConcatOpExpr)
		if !ok {
			break
		}
		args = append(args, r.expr(c.Lhs))
		cur = c.Rhs
	}
	args = append(args, r.expr(cur))
	fn := &ast.IdentExpr{Value: concatLocal}
	call := &ast.FuncCallExpr{Func: fn, Args: args, AdjustRet: true}
	for _, n := range []ast.PositionHolder{fn, call} {
		n.SetLine(e.Line())
		n.SetLastLine(e.LastLine())
	}
	return call
}
