package chart

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-addon/gitops-addon/test/testenv"
)

// The SubjectAccessReview tables of the integration tests, read from their source (the
// tests start real apiservers; this one reads what they ask). Each table is a slice of
// rows the test ranges over, asking testenv.Allowed as user.
var sarTables = []struct {
	file, test, slice string
	// user is what the loop passes testenv.Allowed as the user: a name of the test
	// function, or "" when each row has a user field.
	user string
	side string
	// agentOnHub: user is the agent's hub identity, which the product's registration code
	// gives it (the test cannot be read for it).
	agentOnHub bool
}{
	{file: "test/integration/hubrbac_test.go", test: "TestHubRBACIsLeastPrivilege", slice: "checks", user: "manager", side: "Hub"},
	{file: "test/integration/hubrbac_test.go", test: "TestHubRBACIsLeastPrivilege", slice: "agentChecks", user: "agentUser", side: "Hub", agentOnHub: true},
	{file: "test/integration/uninstall_test.go", test: "TestUninstall", slice: "hookChecks", user: "hook", side: "Hub"},
	{file: "test/integration/agentchart_test.go", test: "TestRenderedManifestsOnARealAPIServer", slice: "checks", side: "Spoke"},
}

type sarAttrs struct {
	Namespace, Group, Resource, Subresource, Verb, Name string
	// Path is a non-resource URL (GET).
	Path string
}

func (a sarAttrs) String() string {
	if a.Path != "" {
		return "get " + a.Path
	}
	s := a.Verb + " " + a.Group + "/" + a.Resource
	if a.Subresource != "" {
		s += "/" + a.Subresource
	}
	if a.Name != "" {
		s += " " + a.Name
	}
	if a.Namespace != "" {
		s += " in " + a.Namespace
	}
	return s
}

type sarRow struct {
	where, test, name string
	side, identity    string
	attrs             sarAttrs
	allowed           bool
}

// sarRows reads every row of sarTables, with the names of the sample cluster written as
// the page writes them.
func sarRows(t *testing.T) []sarRow {
	t.Helper()
	src := newGoSource(t)
	var out []sarRow
	for _, table := range sarTables {
		pkg := src.pkgOfFile(table.file)
		fn := pkg.funcs[table.test]
		require.NotNil(t, fn, "%s: no func %s", table.file, table.test)
		locals := flatLocals(fn.Body)
		scope := &env{pkg: pkg, vars: map[string]any{}, locals: locals}
		checkLoop(t, src, table.file, fn, table.slice, table.user)

		var tableUser string
		switch {
		case table.agentOnHub:
			tableUser = agentHubIdentity(t)
		case table.user != "":
			v, err := scope.lookup(src, table.user)
			require.NoError(t, err, "%s: the user %s of %s", table.file, table.user, table.slice)
			tableUser = identityOfUser(v.(string))
		}
		exprs := locals[table.slice]
		require.Len(t, exprs, 1, "%s: %s is assigned %d times in %s", table.file, table.slice, len(exprs), table.test)
		lit, ok := exprs[0].(*ast.CompositeLit)
		require.True(t, ok, "%s: %s is not a slice literal", table.file, table.slice)
		fields := structFields(t, lit)
		for _, e := range lit.Elts {
			where := src.fset.Position(e.Pos()).String()
			where = strings.TrimPrefix(where, testenv.RepoRoot()+string(filepath.Separator))
			values, err := rowFields(src, scope, fields, e)
			require.NoError(t, err, "%s", where)
			row := sarRow{where: where, test: table.test, side: table.side, identity: tableUser}
			for field, v := range values {
				switch field {
				case "name":
					row.name = v.(string)
				case "allowed":
					row.allowed = v.(bool)
				case "attrs":
					path := row.attrs.Path
					row.attrs = v.(sarAttrs)
					row.attrs.Path = path
				case "path":
					row.attrs.Path = v.(string)
				case "user":
					row.identity = identityOfUser(v.(string))
				default:
					t.Fatalf("%s: a row field %q the test does not know", where, field)
				}
			}
			if row.attrs.Path != "" {
				row.attrs.Verb = "get"
			}
			row.attrs.Namespace = placeholder(row.attrs.Namespace)
			require.NotEmpty(t, row.identity, "%s: no user", where)
			out = append(out, row)
		}
	}
	return out
}

// agentHubIdentity is the identity the agent's hub RoleBinding binds.
func agentHubIdentity(t *testing.T) string {
	t.Helper()
	objects := agentHubBindings(t)
	require.Len(t, objects, 1)
	var b rbacv1.RoleBinding
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(objects[0], &b))
	return identityOf(b.Subjects)
}

func identityOfUser(user string) string {
	if rest, ok := strings.CutPrefix(user, "system:serviceaccount:"); ok {
		if ns, name, ok := strings.Cut(rest, ":"); ok {
			return placeholder("ServiceAccount " + ns + "/" + name)
		}
	}
	return placeholder("User " + user)
}

// checkLoop fails unless the test ranges over slice and asks testenv.Allowed as user
// (or as each row's user).
func checkLoop(t *testing.T, src *goSource, file string, fn *ast.FuncDecl, slice, user string) {
	t.Helper()
	found := false
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		loop, ok := n.(*ast.RangeStmt)
		if !ok || types.ExprString(loop.X) != slice {
			return true
		}
		want := user
		if want == "" {
			want = types.ExprString(loop.Value) + ".user"
		}
		ast.Inspect(loop.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if ok && types.ExprString(call.Fun) == "testenv.Allowed" && len(call.Args) > 3 && types.ExprString(call.Args[3]) == want {
				found = true
			}
			return true
		})
		return true
	})
	require.True(t, found, "%s: %s no longer ranges over %s asking testenv.Allowed as %q: update sarTables", file, fn.Name.Name, slice, user)
}

func structFields(t *testing.T, lit *ast.CompositeLit) []string {
	t.Helper()
	array, ok := lit.Type.(*ast.ArrayType)
	require.True(t, ok, "not a slice literal")
	st, ok := array.Elt.(*ast.StructType)
	require.True(t, ok, "not a slice of an anonymous struct")
	var fields []string
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			fields = append(fields, n.Name)
		}
	}
	return fields
}

func rowFields(src *goSource, scope *env, fields []string, e ast.Expr) (map[string]any, error) {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil, fmt.Errorf("a row that is not a composite literal: %s", types.ExprString(e))
	}
	out := map[string]any{}
	for i, elt := range lit.Elts {
		field, value := "", elt
		if kv, ok := elt.(*ast.KeyValueExpr); ok {
			field, value = types.ExprString(kv.Key), kv.Value
		} else if i < len(fields) {
			field = fields[i]
		}
		v, err := scope.eval(src, value)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", field, err)
		}
		out[field] = v
	}
	return out, nil
}

// goSource evaluates the few expressions the SubjectAccessReview rows are written with:
// string constants of any package of the module, +, fmt.Sprintf, strings.ReplaceAll,
// authorizationv1.ResourceAttributes literals, and calls of functions and closures whose
// bodies assign and return such values. Anything else fails with its position.
type goSource struct {
	t            *testing.T
	root, module string
	fset         *token.FileSet
	pkgs         map[string]*goPackage
}

type goPackage struct {
	path    string
	imports map[string]string
	decls   map[string]ast.Expr
	funcs   map[string]*ast.FuncDecl
}

func newGoSource(t *testing.T) *goSource {
	root := testenv.RepoRoot()
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	module := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(mod), "\n", 2)[0], "module"))
	return &goSource{t: t, root: root, module: module, fset: token.NewFileSet(), pkgs: map[string]*goPackage{}}
}

func (s *goSource) pkgOfFile(file string) *goPackage {
	return s.pkg(s.module + "/" + filepath.ToSlash(filepath.Dir(file)))
}

// pkg parses a package of the module (its test files of the same package included).
func (s *goSource) pkg(importPath string) *goPackage {
	if p, ok := s.pkgs[importPath]; ok {
		return p
	}
	dir := filepath.Join(s.root, filepath.FromSlash(strings.TrimPrefix(importPath, s.module+"/")))
	entries, err := os.ReadDir(dir)
	require.NoError(s.t, err)
	p := &goPackage{path: importPath, imports: map[string]string{}, decls: map[string]ast.Expr{}, funcs: map[string]*ast.FuncDecl{}}
	for _, entry := range entries {
		if entry.IsDir() || !strings.HasSuffix(entry.Name(), ".go") {
			continue
		}
		file, err := parser.ParseFile(s.fset, filepath.Join(dir, entry.Name()), nil, 0)
		require.NoError(s.t, err)
		if strings.HasSuffix(file.Name.Name, "_test") {
			continue
		}
		for _, imp := range file.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			name := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			p.imports[name] = path
		}
		for _, decl := range file.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					p.funcs[d.Name.Name] = d
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					if vs, ok := spec.(*ast.ValueSpec); ok && len(vs.Values) == len(vs.Names) {
						for i, n := range vs.Names {
							p.decls[n.Name] = vs.Values[i]
						}
					}
				}
			}
		}
	}
	s.pkgs[importPath] = p
	return p
}

// env is a scope: the evaluated names of a call, or (locals) the names a test function
// assigns anywhere in its body, evaluated when asked for.
type env struct {
	pkg    *goPackage
	vars   map[string]any
	locals map[string][]ast.Expr
	parent *env
}

type closure struct {
	params []string
	body   *ast.BlockStmt
	env    *env
}

type builtin func(args []any) (any, error)

var errNotEvaluable = errors.New("not evaluable")

// flatLocals are the names a function body assigns or declares, with every expression
// assigned to each (nil for one it cannot tell, as a multi-value call's).
func flatLocals(body *ast.BlockStmt) map[string][]ast.Expr {
	out := map[string][]ast.Expr{}
	ast.Inspect(body, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.AssignStmt:
			for i, l := range s.Lhs {
				id, ok := l.(*ast.Ident)
				if !ok || id.Name == "_" {
					continue
				}
				var value ast.Expr
				if len(s.Lhs) == len(s.Rhs) {
					value = s.Rhs[i]
				}
				out[id.Name] = append(out[id.Name], value)
			}
		case *ast.ValueSpec:
			for i, id := range s.Names {
				var value ast.Expr
				if len(s.Values) == len(s.Names) {
					value = s.Values[i]
				}
				out[id.Name] = append(out[id.Name], value)
			}
		}
		return true
	})
	return out
}

func (e *env) lookup(src *goSource, name string) (any, error) {
	for s := e; s != nil; s = s.parent {
		if v, ok := s.vars[name]; ok {
			return v, nil
		}
		if exprs, ok := s.locals[name]; ok {
			if len(exprs) != 1 || exprs[0] == nil {
				return nil, fmt.Errorf("%s: assigned %d times, or from a call: %w", name, len(exprs), errNotEvaluable)
			}
			v, err := s.eval(src, exprs[0])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			s.vars[name] = v
			return v, nil
		}
	}
	return src.global(e.pkg, name)
}

func (s *goSource) global(p *goPackage, name string) (any, error) {
	switch name {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	if d, ok := p.funcs[name]; ok {
		return funcOf(d, &env{pkg: p}), nil
	}
	if x, ok := p.decls[name]; ok {
		return (&env{pkg: p}).eval(s, x)
	}
	return nil, fmt.Errorf("%s: not found in %s: %w", name, p.path, errNotEvaluable)
}

func funcOf(d *ast.FuncDecl, scope *env) *closure {
	return &closure{params: paramNames(d.Type), body: d.Body, env: scope}
}

func paramNames(ft *ast.FuncType) []string {
	var out []string
	for _, f := range ft.Params.List {
		for _, n := range f.Names {
			out = append(out, n.Name)
		}
	}
	return out
}

func (e *env) eval(src *goSource, x ast.Expr) (v any, err error) {
	defer func() {
		if err != nil && !strings.Contains(err.Error(), " at ") {
			err = fmt.Errorf("%s at %s: %w", types.ExprString(x), src.fset.Position(x.Pos()), err)
		}
	}()
	switch x := x.(type) {
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			return strconv.Unquote(x.Value)
		}
	case *ast.ParenExpr:
		return e.eval(src, x.X)
	case *ast.Ident:
		return e.lookup(src, x.Name)
	case *ast.BinaryExpr:
		if x.Op == token.ADD {
			l, err := e.eval(src, x.X)
			if err != nil {
				return nil, err
			}
			r, err := e.eval(src, x.Y)
			if err != nil {
				return nil, err
			}
			ls, lok := l.(string)
			rs, rok := r.(string)
			if lok && rok {
				return ls + rs, nil
			}
		}
	case *ast.FuncLit:
		return &closure{params: paramNames(x.Type), body: x.Body, env: e}, nil
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			if path, ok := e.pkg.imports[id.Name]; ok && !e.shadowed(id.Name) {
				switch path + "." + x.Sel.Name {
				case "fmt.Sprintf":
					return builtin(func(args []any) (any, error) { return fmt.Sprintf(args[0].(string), args[1:]...), nil }), nil
				case "strings.ReplaceAll":
					return builtin(func(args []any) (any, error) {
						return strings.ReplaceAll(args[0].(string), args[1].(string), args[2].(string)), nil
					}), nil
				}
				if strings.HasPrefix(path, src.module+"/") {
					return src.global(src.pkg(path), x.Sel.Name)
				}
				return nil, fmt.Errorf("%s.%s: %w", path, x.Sel.Name, errNotEvaluable)
			}
		}
		base, err := e.eval(src, x.X)
		if err != nil {
			return nil, err
		}
		if a, ok := base.(sarAttrs); ok {
			return a.field(x.Sel.Name)
		}
	case *ast.CompositeLit:
		if sel, ok := x.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "ResourceAttributes" {
			var a sarAttrs
			for _, elt := range x.Elts {
				kv, ok := elt.(*ast.KeyValueExpr)
				if !ok {
					return nil, fmt.Errorf("a positional field: %w", errNotEvaluable)
				}
				v, err := e.eval(src, kv.Value)
				if err != nil {
					return nil, err
				}
				s, ok := v.(string)
				if !ok {
					return nil, fmt.Errorf("field %s is not a string: %w", types.ExprString(kv.Key), errNotEvaluable)
				}
				if err := a.set(types.ExprString(kv.Key), s); err != nil {
					return nil, err
				}
			}
			return a, nil
		}
	case *ast.CallExpr:
		fn, err := e.eval(src, x.Fun)
		if err != nil {
			return nil, err
		}
		args := make([]any, 0, len(x.Args))
		for _, a := range x.Args {
			v, err := e.eval(src, a)
			if err != nil {
				return nil, err
			}
			args = append(args, v)
		}
		switch fn := fn.(type) {
		case builtin:
			return fn(args)
		case *closure:
			return fn.call(src, args)
		}
	}
	return nil, errNotEvaluable
}

func (e *env) shadowed(name string) bool {
	for s := e; s != nil; s = s.parent {
		if _, ok := s.vars[name]; ok {
			return true
		}
		if _, ok := s.locals[name]; ok {
			return true
		}
	}
	return false
}

// call runs a body of assignments and one return.
func (c *closure) call(src *goSource, args []any) (any, error) {
	if len(args) != len(c.params) {
		return nil, fmt.Errorf("%d arguments for %d parameters: %w", len(args), len(c.params), errNotEvaluable)
	}
	scope := &env{pkg: c.env.pkg, vars: map[string]any{}, parent: c.env}
	for i, p := range c.params {
		scope.vars[p] = args[i]
	}
	for _, stmt := range c.body.List {
		switch s := stmt.(type) {
		case *ast.ReturnStmt:
			if len(s.Results) != 1 {
				return nil, fmt.Errorf("a return of %d values: %w", len(s.Results), errNotEvaluable)
			}
			return scope.eval(src, s.Results[0])
		case *ast.AssignStmt:
			if len(s.Lhs) != 1 || len(s.Rhs) != 1 {
				return nil, fmt.Errorf("a multiple assignment: %w", errNotEvaluable)
			}
			v, err := scope.eval(src, s.Rhs[0])
			if err != nil {
				return nil, err
			}
			switch l := s.Lhs[0].(type) {
			case *ast.Ident:
				scope.vars[l.Name] = v
			case *ast.SelectorExpr:
				base, ok := l.X.(*ast.Ident)
				a, isAttrs := scope.vars[base.Name].(sarAttrs)
				str, isString := v.(string)
				if !ok || !isAttrs || !isString {
					return nil, fmt.Errorf("assigning %s: %w", types.ExprString(l), errNotEvaluable)
				}
				if err := a.set(l.Sel.Name, str); err != nil {
					return nil, err
				}
				scope.vars[base.Name] = a
			default:
				return nil, fmt.Errorf("assigning %s: %w", types.ExprString(l), errNotEvaluable)
			}
		default:
			return nil, fmt.Errorf("a %T in a function body: %w", stmt, errNotEvaluable)
		}
	}
	return nil, fmt.Errorf("a function without a return: %w", errNotEvaluable)
}

func (a *sarAttrs) set(field, value string) error {
	switch field {
	case "Namespace":
		a.Namespace = value
	case "Group":
		a.Group = value
	case "Resource":
		a.Resource = value
	case "Subresource":
		a.Subresource = value
	case "Verb":
		a.Verb = value
	case "Name":
		a.Name = value
	default:
		return fmt.Errorf("ResourceAttributes.%s: %w", field, errNotEvaluable)
	}
	return nil
}

func (a sarAttrs) field(name string) (any, error) {
	for _, f := range []struct {
		name, value string
	}{{"Namespace", a.Namespace}, {"Group", a.Group}, {"Resource", a.Resource}, {"Subresource", a.Subresource}, {"Verb", a.Verb}, {"Name", a.Name}} {
		if f.name == name {
			return f.value, nil
		}
	}
	return nil, fmt.Errorf("ResourceAttributes.%s: %w", name, errNotEvaluable)
}
