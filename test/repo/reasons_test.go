package repo

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/tools/go/packages"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// TestEveryReasonSetIsInATable: every condition or Event reason the code under pkg/ can
// set is declared in a table (pkg/api/v1beta1, pkg/api/v1alpha1, pkg/contract: their
// Reasons), with what it means and what to do, which the references are rendered from. The
// reasons are found by following each place a reason is set back to its constants, with
// the type checker: a Reason field of any struct (metav1.Condition, the pull model's
// Problem, ...), and an argument to a parameter named reason of an Event API (and of the
// helpers that record them); through variables, struct fields, parameters and returned
// values. A reason the analysis cannot follow to constants fails the test too, naming
// the place.
func TestEveryReasonSetIsInATable(t *testing.T) {
	set, untraced, _ := reasonsSetInPkg(t)
	require.NotEmpty(t, set)
	for _, u := range untraced {
		t.Errorf("a reason set from something that is not a constant, which this test cannot follow: %s", u)
	}
	declared := tabled()
	var missing []string
	for value, where := range set {
		if !declared[value] {
			missing = append(missing, fmt.Sprintf("%q (set at %s)", value, strings.Join(where, ", ")))
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("reason %s is in no table: add it, with its meaning and fix, to the Reasons of pkg/api/v1beta1 (the GitOpsCluster "+
			"and the hub's Events), pkg/api/v1alpha1 (the pull model) or pkg/contract (a cluster's addon); then make docs", m)
	}
}

// TestNoReasonIsDeclaredAndNeverSet: a reason a table holds, or a Reason* constant of
// pkg/, that no code sets is a reason a user is told about and never sees: it goes.
func TestNoReasonIsDeclaredAndNeverSet(t *testing.T) {
	set, _, declared := reasonsSetInPkg(t)
	for value, where := range declared {
		if _, ok := set[value]; !ok {
			t.Errorf("reason %q is declared (%s) and never set: remove it, or set it", value, where)
		}
	}
	for value := range tabled() {
		if _, ok := set[value]; !ok {
			t.Errorf("reason %q is in a table and never set: remove it, or set it", value)
		}
	}
}

// tabled are the names of every reason the tables hold.
func tabled() map[string]bool {
	names := map[string]bool{}
	for _, table := range contract.ReasonTables {
		for _, r := range table.Reasons {
			names[r.Name] = true
		}
	}
	return names
}

// pkgReasons is reasonsSetIn of ./pkg/..., loaded once for both tests (type-checking
// pkg/ is most of their time).
var pkgReasons struct {
	once     sync.Once
	set      map[string][]string
	untraced []string
	declared map[string]string
}

func reasonsSetInPkg(t *testing.T) (map[string][]string, []string, map[string]string) {
	t.Helper()
	pkgReasons.once.Do(func() { pkgReasons.set, pkgReasons.untraced, pkgReasons.declared = reasonsSetIn(t, "./pkg/...") })
	require.NotNil(t, pkgReasons.set, "loading ./pkg/... failed in an earlier test")
	return pkgReasons.set, pkgReasons.untraced, pkgReasons.declared
}

// reasonFlow follows reason values back to their constants across a set of packages.
type reasonFlow struct {
	fset     *token.FileSet
	pkgs     []*packages.Package
	reasons  map[string][]string // value -> where it is set
	untraced []string
	// seen guards the worklist: each object or expression is followed once.
	seen map[any]bool
	// calls maps a function to the call expressions that call it, statically.
	calls map[*types.Func][]callSite
	// fieldWrites maps a struct field to the expressions written to it.
	fieldWrites map[*types.Var][]exprSite
	// varWrites maps a local variable to the expressions assigned to it; tupleWrites to
	// the calls whose i-th result is (v, w := f()).
	varWrites   map[*types.Var][]exprSite
	tupleWrites map[*types.Var][]tupleSite
	// returns maps a function to its return statements.
	returns  map[*types.Func][]*ast.ReturnStmt
	funcInfo map[*types.Func]*types.Info
	// params maps a parameter of one of our functions to the function and its position.
	params map[*types.Var]paramSite
}

type paramSite struct {
	fn    *types.Func
	index int
}

type exprSite struct {
	expr ast.Expr
	info *types.Info
}

type tupleSite struct {
	call  *ast.CallExpr
	index int
	info  *types.Info
}

type callSite struct {
	call *ast.CallExpr
	info *types.Info
}

// reasonsSetIn loads the packages and returns every reason value they can set, with
// where, the places whose reason could not be followed to constants, and the string
// constants named Reason* they declare (value -> where). Test-support packages (named
// *test) are left out: what they set is another component's reason.
func reasonsSetIn(t *testing.T, pattern string) (map[string][]string, []string, map[string]string) {
	t.Helper()
	cfg := &packages.Config{Dir: testenv.RepoRoot(), Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax |
		packages.NeedTypes | packages.NeedTypesInfo}
	pkgs, err := packages.Load(cfg, pattern)
	require.NoError(t, err)
	pkgs = slices.DeleteFunc(pkgs, func(p *packages.Package) bool { return strings.HasSuffix(p.Name, "test") })
	declared := map[string]string{}
	for _, p := range pkgs {
		require.Empty(t, p.Errors, "loading %s", p.PkgPath)
		for _, name := range p.Types.Scope().Names() {
			if c, ok := p.Types.Scope().Lookup(name).(*types.Const); ok && strings.HasPrefix(name, "Reason") && c.Val().Kind() == constant.String {
				declared[constant.StringVal(c.Val())] = p.PkgPath + "." + name
			}
		}
	}
	f := &reasonFlow{fset: pkgs[0].Fset, pkgs: pkgs, reasons: map[string][]string{}, seen: map[any]bool{},
		calls: map[*types.Func][]callSite{}, fieldWrites: map[*types.Var][]exprSite{}, varWrites: map[*types.Var][]exprSite{},
		tupleWrites: map[*types.Var][]tupleSite{}, returns: map[*types.Func][]*ast.ReturnStmt{}, funcInfo: map[*types.Func]*types.Info{},
		params: map[*types.Var]paramSite{}}
	f.index()
	for _, s := range f.sinks() {
		f.follow(s, f.where(s.expr))
	}
	return f.reasons, f.untraced, declared
}

// index records, once, what the follow steps look up: calls, field and variable writes,
// return statements.
func (f *reasonFlow) index() {
	for _, p := range f.pkgs {
		for _, file := range p.Syntax {
			info := p.TypesInfo
			ast.Inspect(file, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncDecl:
					if fn, ok := info.Defs[n.Name].(*types.Func); ok && n.Body != nil {
						f.funcInfo[fn] = info
						params := fn.Type().(*types.Signature).Params()
						for i := 0; i < params.Len(); i++ {
							f.params[params.At(i)] = paramSite{fn, i}
						}
						ast.Inspect(n.Body, func(m ast.Node) bool {
							if _, lit := m.(*ast.FuncLit); lit {
								return false
							}
							if r, ok := m.(*ast.ReturnStmt); ok {
								f.returns[fn] = append(f.returns[fn], r)
							}
							return true
						})
					}
				case *ast.CallExpr:
					if fn := calledFunc(info, n); fn != nil {
						f.calls[fn] = append(f.calls[fn], callSite{n, info})
					}
				case *ast.CompositeLit:
					f.indexLiteral(info, n)
				case *ast.AssignStmt:
					f.indexAssign(info, n)
				case *ast.ValueSpec:
					for i, name := range n.Names {
						if v, ok := info.Defs[name].(*types.Var); ok && i < len(n.Values) && len(n.Values) == len(n.Names) {
							f.varWrites[v] = append(f.varWrites[v], exprSite{n.Values[i], info})
						}
					}
				}
				return true
			})
		}
	}
}

func (f *reasonFlow) indexLiteral(info *types.Info, lit *ast.CompositeLit) {
	st, ok := underlyingStruct(info.TypeOf(lit))
	if !ok {
		return
	}
	for i, elt := range lit.Elts {
		if kv, ok := elt.(*ast.KeyValueExpr); ok {
			if key, ok := kv.Key.(*ast.Ident); ok {
				if field, ok := info.Uses[key].(*types.Var); ok {
					f.fieldWrites[field] = append(f.fieldWrites[field], exprSite{kv.Value, info})
				}
			}
		} else if i < st.NumFields() {
			f.fieldWrites[st.Field(i)] = append(f.fieldWrites[st.Field(i)], exprSite{elt, info})
		}
	}
}

func (f *reasonFlow) indexAssign(info *types.Info, a *ast.AssignStmt) {
	if len(a.Rhs) == 1 && len(a.Lhs) > 1 {
		if call, ok := a.Rhs[0].(*ast.CallExpr); ok {
			for i, lhs := range a.Lhs {
				if id, ok := lhs.(*ast.Ident); ok {
					if v, ok := info.ObjectOf(id).(*types.Var); ok {
						f.tupleWrites[v] = append(f.tupleWrites[v], tupleSite{call, i, info})
					}
				}
			}
		}
		return
	}
	if len(a.Lhs) != len(a.Rhs) {
		return
	}
	for i, lhs := range a.Lhs {
		switch l := lhs.(type) {
		case *ast.Ident:
			if v, ok := info.ObjectOf(l).(*types.Var); ok {
				f.varWrites[v] = append(f.varWrites[v], exprSite{a.Rhs[i], info})
			}
		case *ast.SelectorExpr:
			if sel := info.Selections[l]; sel != nil && sel.Kind() == types.FieldVal {
				if field, ok := sel.Obj().(*types.Var); ok {
					f.fieldWrites[field] = append(f.fieldWrites[field], exprSite{a.Rhs[i], info})
				}
			}
		}
	}
}

// sinks are the places a reason is set: writes to a string field named Reason, and
// arguments to a string parameter named reason of a function outside pkg/ (Events; the
// helpers inside pkg/ are followed through their parameter).
func (f *reasonFlow) sinks() []exprSite {
	var out []exprSite
	for field, writes := range f.fieldWrites {
		if field.Name() == "Reason" && isString(field.Type()) {
			out = append(out, writes...)
		}
	}
	for _, p := range f.pkgs {
		for _, file := range p.Syntax {
			info := p.TypesInfo
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sig, ok := info.TypeOf(call.Fun).Underlying().(*types.Signature)
				if !ok {
					return true
				}
				if fn := calledFunc(info, call); fn != nil && f.funcInfo[fn] != nil {
					return true // ours: its reason parameter is followed from inside
				}
				for i := 0; i < sig.Params().Len() && i < len(call.Args); i++ {
					if p := sig.Params().At(i); p.Name() == "reason" && isString(p.Type()) {
						out = append(out, exprSite{call.Args[i], info})
					}
				}
				return true
			})
		}
	}
	return out
}

// follow records the constant values expr can take, following it back.
func (f *reasonFlow) follow(s exprSite, where string) {
	if f.seen[s.expr] {
		return
	}
	f.seen[s.expr] = true
	if tv, ok := s.info.Types[s.expr]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
		v := constant.StringVal(tv.Value)
		f.reasons[v] = appendOnce(f.reasons[v], where)
		return
	}
	switch e := s.expr.(type) {
	case *ast.ParenExpr:
		f.follow(exprSite{e.X, s.info}, where)
	case *ast.Ident:
		f.followObject(s.info.ObjectOf(e), s, where)
	case *ast.SelectorExpr:
		if sel := s.info.Selections[e]; sel != nil && sel.Kind() == types.FieldVal {
			f.followField(sel.Obj().(*types.Var), where)
			return
		}
		f.followObject(s.info.ObjectOf(e.Sel), s, where)
	case *ast.CallExpr:
		f.followCall(e, s, where)
	default:
		f.untrace(s, where)
	}
}

func (f *reasonFlow) followObject(obj types.Object, s exprSite, where string) {
	v, ok := obj.(*types.Var)
	if !ok {
		f.untrace(s, where)
		return
	}
	if f.seen[v] {
		return
	}
	f.seen[v] = true
	if p, ok := f.params[v]; ok {
		for _, c := range f.calls[p.fn] {
			if p.index < len(c.call.Args) {
				f.follow(exprSite{c.call.Args[p.index], c.info}, f.where(c.call))
			}
		}
		return
	}
	writes, tuples := f.varWrites[v], f.tupleWrites[v]
	if len(writes)+len(tuples) == 0 {
		f.untrace(s, where)
	}
	for _, w := range writes {
		f.follow(w, where)
	}
	for _, tw := range tuples {
		f.followResult(tw.call, tw.index, exprSite{tw.call, tw.info}, where)
	}
}

// followResult follows the index-th result of a call of one of our functions (of n
// results) through its return statements.
func (f *reasonFlow) followResult(call *ast.CallExpr, index int, s exprSite, where string) {
	fn := calledFunc(s.info, call)
	if fn == nil || f.funcInfo[fn] == nil {
		f.untrace(s, where)
		return
	}
	n := fn.Type().(*types.Signature).Results().Len()
	for _, r := range f.returns[fn] {
		if len(r.Results) == n {
			f.follow(exprSite{r.Results[index], f.funcInfo[fn]}, where)
		} else if len(r.Results) == 1 && n > 1 {
			f.untrace(exprSite{r.Results[0], f.funcInfo[fn]}, where) // return g(): not followed
		}
	}
}

func (f *reasonFlow) followField(field *types.Var, where string) {
	if f.seen[field] {
		return
	}
	f.seen[field] = true
	for _, w := range f.fieldWrites[field] {
		f.follow(w, f.where(w.expr))
	}
}

// followCall follows a call's result: our function's returned values, or the
// arguments of cmp.Or and of a conversion to string.
func (f *reasonFlow) followCall(call *ast.CallExpr, s exprSite, where string) {
	if tv, ok := s.info.Types[call.Fun]; ok && tv.IsType() && len(call.Args) == 1 {
		f.follow(exprSite{call.Args[0], s.info}, where)
		return
	}
	fn := calledFunc(s.info, call)
	if fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "cmp" && fn.Name() == "Or" {
		for _, a := range call.Args {
			f.follow(exprSite{a, s.info}, where)
		}
		return
	}
	if fn == nil || f.funcInfo[fn] == nil || fn.Type().(*types.Signature).Results().Len() != 1 {
		f.untrace(s, where)
		return
	}
	if f.seen[fn] {
		return
	}
	f.seen[fn] = true
	f.followResult(call, 0, s, where)
}

func (f *reasonFlow) untrace(s exprSite, where string) {
	f.untraced = append(f.untraced, fmt.Sprintf("%s (%s)", types.ExprString(s.expr), where))
}

func (f *reasonFlow) where(n ast.Node) string {
	p := f.fset.Position(n.Pos())
	rel, err := filepath.Rel(testenv.RepoRoot(), p.Filename)
	if err != nil {
		rel = p.Filename
	}
	return fmt.Sprintf("%s:%d", rel, p.Line)
}

func calledFunc(info *types.Info, call *ast.CallExpr) *types.Func {
	var id *ast.Ident
	switch fun := call.Fun.(type) {
	case *ast.Ident:
		id = fun
	case *ast.SelectorExpr:
		id = fun.Sel
	case *ast.IndexExpr:
		if i, ok := fun.X.(*ast.Ident); ok {
			id = i
		}
	}
	if id == nil {
		return nil
	}
	fn, _ := info.Uses[id].(*types.Func)
	if fn != nil {
		fn = fn.Origin()
	}
	return fn
}

func underlyingStruct(t types.Type) (*types.Struct, bool) {
	if t == nil {
		return nil, false
	}
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	st, ok := t.Underlying().(*types.Struct)
	return st, ok
}

func isString(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Kind() == types.String
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
