package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// This file reads pkg/ with go/ast (no type checking, no build) and finds:
//   - condition types: the constants named Condition*, and the string literals a
//     *Condition composite literal takes as its Type;
//   - condition reasons: the constants named Reason*, those of a const group whose
//     comment starts with "Reasons of", and the string literals given as a Reason field;
//   - Event reasons: the reason argument of every Eventf call and of the controllers'
//     event(object, type, reason, format, args...) helpers;
//
// and, for each reason, the code that sets it: the message next to it (the Message
// field of the same literal, the next argument, the next result, or the Message assigned
// to the same condition in the statements that follow), rendered as a template in which
// every value computed at run time is <the expression that computes it>.

// module is the import path prefix of the repository's own packages.
const module = "github.com/gitops-addon/gitops-addon/"

// shownOn says where a user sees the conditions and reasons a package declares, and
// recordedOn which object carries the Events a package records. A package that declares
// reasons or records Events and has no entry here fails the generator: say where they
// show before documenting them.
var shownOn = []struct{ prefix, where string }{
	{"pkg/api/v1beta1", "the GitOpsCluster's `status.conditions` (`kubectl describe gitopscluster`)"},
	{"pkg/hub/gitopscluster", "the GitOpsCluster's `status.conditions`"},
	{"pkg/hub/argocdagent", "the GitOpsCluster's `ArgoCDAgentTrust` condition"},
	{"pkg/hub/pullmodel", "the hub Application (`kubectl describe application`): its `PullModelError` or `PullModelWarning` condition, whose " +
		"message starts with the reason, and an Event of that reason; and in the MulticlusterApplicationSetReport's entry"},
	{"pkg/hub/addon", "Events on the cluster's ManagedClusterAddOn `gitops-addon`"},
	{"pkg/contract", "the cluster's ManagedClusterAddOn `gitops-addon` on the hub (`kubectl -n <cluster> describe managedclusteraddon gitops-addon`), " +
		"reported by the spoke agent"},
	{"pkg/spoke/", "the cluster's ManagedClusterAddOn `gitops-addon` on the hub (`kubectl -n <cluster> describe managedclusteraddon gitops-addon`), " +
		"reported by the spoke agent"},
}

var recordedOn = []struct{ prefix, where string }{
	{"pkg/hub/gitopscluster", "the GitOpsCluster (`kubectl describe gitopscluster`)"},
	{"pkg/hub/argocdagent", "every GitOpsCluster of the Argo CD namespace"},
	{"pkg/hub/appsetaccess", "the GitOpsClusters that need the shared object (after a manager restart, the object itself)"},
	{"pkg/hub/ownership", "the GitOpsCluster (`kubectl describe gitopscluster`)"},
	{"pkg/hub/pullmodel", "the hub Application (`kubectl describe application`)"},
	{"pkg/hub/addon", "the cluster's ManagedClusterAddOn `gitops-addon` on the hub"},
	{"pkg/hub/crdupgrade", "the hub's CustomResourceDefinition (`kubectl describe crd gitopsclusters.apps.open-cluster-management.io`)"},
	{"pkg/spoke/crdinstall", "the spoke's CustomResourceDefinition (on the spoke: `kubectl describe crd <name>`)"},
	{"pkg/spoke/routeguard", "the spoke's APIService `v1.route.openshift.io` (on the spoke: `kubectl get events -A`)"},
	{"pkg/spoke/repocreds", "the spoke's Secret it did not overwrite, in the Argo CD namespace (on the spoke: `kubectl -n openshift-gitops get events`)"},
}

func whereShown(pkg string) (string, error) {
	return lookUp(shownOn, pkg, "shownOn", "declares condition reasons")
}

func whereRecorded(pkg string) (string, error) {
	return lookUp(recordedOn, pkg, "recordedOn", "records Events")
}

func lookUp(table []struct{ prefix, where string }, pkg, name, what string) (string, error) {
	for _, s := range table {
		if pkg == s.prefix || strings.HasPrefix(pkg, strings.TrimSuffix(s.prefix, "/")+"/") {
			return s.where, nil
		}
	}
	return "", fmt.Errorf("%s %s, but hack/docgen's %s does not say where a user sees them: add it", pkg, what, name)
}

// codePackage is a parsed package of pkg/.
type codePackage struct {
	dir    string // relative to the repository root, slash-separated: pkg/hub/pullmodel
	name   string
	files  []*codeFile
	consts map[string]*constDef
}

type codeFile struct {
	path    string // relative to the repository root
	ast     *ast.File
	imports map[string]string // local name -> package dir (pkg/...), for the module's own packages
}

// constDef is a string constant of the code.
type constDef struct {
	pkg   *codePackage
	file  string
	name  string
	value string
	doc   string // the constant's own comment
	group string // the comment of its const ( ... ) group
	expr  ast.Expr
	done  bool
}

// site is one place that sets a condition reason or records an Event.
type site struct {
	pkg, file, function string
	event               bool
	eventType           string // Normal or Warning, for Events
	conditionType       string // the condition the reason is set on, when the code says
	appendedTo          string // the list a problem literal is appended to (v.errors), if it is
	message             string // the message template; "" when the code does not say next to it
}

// reasonDef is a reason with everything found about it.
type reasonDef struct {
	value string
	def   *constDef // nil for a reason written as a literal
	pkg   string    // where it is declared (or used, for a literal)
	sites []site
}

type codeIndex struct {
	fset     *token.FileSet
	packages map[string]*codePackage // by dir
	// conditionTypes by value: the constant, or the package where a literal type is used.
	conditionTypes map[string]*conditionTypeDef
	reasons        map[string]*reasonDef // by pkg + "." + value
	events         map[string]*reasonDef // by value
}

type conditionTypeDef struct {
	value string
	def   *constDef
	pkg   string
	doc   string
}

// loadCode parses every non-test Go file under root/pkg, outside the test-support
// packages (named, as Go's httptest, after what they serve tests of: pulltest,
// routeapitest), whose fixtures copy other components' reasons and set nothing a user sees.
func loadCode(root string) (*codeIndex, error) {
	idx := &codeIndex{fset: token.NewFileSet(), packages: map[string]*codePackage{}, conditionTypes: map[string]*conditionTypeDef{},
		reasons: map[string]*reasonDef{}, events: map[string]*reasonDef{}}
	err := filepath.WalkDir(filepath.Join(root, "pkg"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasSuffix(d.Name(), "test") {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(idx.fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		dir := pathDir(rel)
		p := idx.packages[dir]
		if p == nil {
			p = &codePackage{dir: dir, name: f.Name.Name, consts: map[string]*constDef{}}
			idx.packages[dir] = p
		}
		p.files = append(p.files, &codeFile{path: rel, ast: f})
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, p := range idx.packages {
		for _, f := range p.files {
			f.imports = idx.moduleImports(f.ast)
			collectConsts(p, f)
		}
	}
	for _, p := range idx.packages {
		for _, c := range p.consts {
			if err := idx.resolveConst(c, 0); err != nil {
				return nil, err
			}
		}
	}
	return idx, nil
}

func pathDir(rel string) string {
	i := strings.LastIndex(rel, "/")
	return rel[:i]
}

// moduleImports maps the local names of a file's imports of the module's own packages
// to their directories.
func (idx *codeIndex) moduleImports(f *ast.File) map[string]string {
	imports := map[string]string{}
	for _, spec := range f.Imports {
		path, err := strconv.Unquote(spec.Path.Value)
		if err != nil || !strings.HasPrefix(path, module) {
			continue
		}
		dir := strings.TrimPrefix(path, module)
		name := dir[strings.LastIndex(dir, "/")+1:]
		if p := idx.packages[dir]; p != nil {
			name = p.name
		}
		if spec.Name != nil {
			name = spec.Name.Name
		}
		imports[name] = dir
	}
	return imports
}

func collectConsts(p *codePackage, f *codeFile) {
	for _, decl := range f.ast.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		group := ""
		if gen.Lparen.IsValid() && gen.Doc != nil {
			group = commentText(gen.Doc)
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			doc := ""
			switch {
			case vs.Doc != nil:
				doc = commentText(vs.Doc)
			case vs.Comment != nil:
				doc = commentText(vs.Comment)
			case !gen.Lparen.IsValid() && gen.Doc != nil:
				doc = commentText(gen.Doc)
			}
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				p.consts[name.Name] = &constDef{pkg: p, file: f.path, name: name.Name, doc: doc, group: group, expr: vs.Values[i]}
			}
		}
	}
}

// resolveConst sets c.value when the constant is a string, following references to other
// constants of the module.
func (idx *codeIndex) resolveConst(c *constDef, depth int) error {
	if c.done {
		return nil
	}
	if depth > 10 {
		return fmt.Errorf("constant %s.%s: too many references", c.pkg.dir, c.name)
	}
	switch e := c.expr.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			c.value, _ = strconv.Unquote(e.Value)
		}
	case *ast.Ident, *ast.SelectorExpr:
		if target := idx.constOf(c.pkg, idx.fileOf(c), e); target != nil {
			if err := idx.resolveConst(target, depth+1); err != nil {
				return err
			}
			c.value = target.value
		}
	}
	c.done = true
	return nil
}

func (idx *codeIndex) fileOf(c *constDef) *codeFile {
	for _, f := range c.pkg.files {
		if f.path == c.file {
			return f
		}
	}
	return nil
}

// constOf returns the module constant an identifier or a selector names, if it names one.
func (idx *codeIndex) constOf(p *codePackage, f *codeFile, e ast.Expr) *constDef {
	switch e := e.(type) {
	case *ast.Ident:
		return p.consts[e.Name]
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		if !ok || f == nil {
			return nil
		}
		if dir, ok := f.imports[x.Name]; ok {
			if other := idx.packages[dir]; other != nil {
				return other.consts[e.Sel.Name]
			}
		}
	}
	return nil
}

// isConditionType says whether a constant names a condition type.
func isConditionType(c *constDef) bool {
	return c.value != "" && hasWordPrefix(c.name, "Condition")
}

// isReason says whether a constant names a condition or Event reason.
func isReason(c *constDef) bool {
	return c.value != "" && (hasWordPrefix(c.name, "Reason") || strings.HasPrefix(c.group, "Reasons of"))
}

// hasWordPrefix: "ReasonX" has the prefix "Reason", "Reasonable" does not.
func hasWordPrefix(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	return ok && rest != "" && rest[0] >= 'A' && rest[0] <= 'Z'
}

// scan finds the condition types, the reasons and the places that set them.
func (idx *codeIndex) scan() error {
	for _, p := range sortedPackages(idx.packages) {
		for _, c := range sortedConsts(p.consts) {
			switch {
			case isConditionType(c) && !isAlias(c):
				idx.conditionTypes[c.value] = &conditionTypeDef{value: c.value, def: c, pkg: p.dir, doc: c.doc}
			case isReason(c) && !isAlias(c):
				idx.reason(p.dir, c.value, c)
			}
		}
	}
	for _, p := range sortedPackages(idx.packages) {
		for _, f := range p.files {
			idx.scanFile(p, f)
		}
	}
	for key, r := range idx.reasons {
		if len(r.sites) == 0 && r.def == nil {
			delete(idx.reasons, key)
		}
	}
	for _, r := range idx.reasons {
		idx.inferConditionTypes(r)
	}
	return nil
}

// inferConditionTypes fills in, for the sites whose code does not say on which condition
// it sets the reason, the condition type the reason's comment or its group's comment
// names; when it names several, the Error or Warning one by the list the problem is
// appended to (v.errors, v.warnings) or by the comment's words.
func (idx *codeIndex) inferConditionTypes(r *reasonDef) {
	if r.def == nil {
		return
	}
	var mentioned []string
	for _, doc := range []string{r.def.doc, r.def.group} {
		for _, t := range sortedKeys(idx.conditionTypes) {
			if mentions(doc, t) {
				mentioned = appendNew(mentioned, t)
			}
		}
		if len(mentioned) > 0 {
			break
		}
	}
	for i := range r.sites {
		s := &r.sites[i]
		if s.conditionType != "" || len(mentioned) == 0 {
			continue
		}
		if len(mentioned) == 1 {
			s.conditionType = mentioned[0]
			continue
		}
		for _, suffix := range []string{"Error", "Warning"} {
			word := strings.ToLower(suffix)
			if strings.Contains(strings.ToLower(s.appendedTo), word) ||
				(s.appendedTo == "" && strings.Contains(strings.ToLower(r.def.group), word+"s")) {
				for _, t := range mentioned {
					if strings.HasSuffix(t, suffix) {
						s.conditionType = t
					}
				}
			}
		}
	}
}

// mentions says whether text names word as a whole word.
func mentions(text, word string) bool {
	for i := strings.Index(text, word); i >= 0; {
		before := i == 0 || !isWordByte(text[i-1])
		end := i + len(word)
		after := end == len(text) || !isWordByte(text[end])
		if before && after {
			return true
		}
		next := strings.Index(text[i+1:], word)
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return false
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// isAlias: a constant defined as another constant (ConditionCertificate =
// contract.ConditionArgoCDAgentCertificate) is documented where the original is.
func isAlias(c *constDef) bool {
	_, lit := c.expr.(*ast.BasicLit)
	return !lit
}

func (idx *codeIndex) reason(pkg, value string, def *constDef) *reasonDef {
	key := pkg + "." + value
	if r := idx.reasons[key]; r != nil {
		return r
	}
	r := &reasonDef{value: value, def: def, pkg: pkg}
	idx.reasons[key] = r
	return r
}

func (idx *codeIndex) scanFile(p *codePackage, f *codeFile) {
	var stack []ast.Node
	ast.Inspect(f.ast, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		switch n := n.(type) {
		case *ast.GenDecl:
			if n.Tok == token.CONST {
				stack = stack[:len(stack)-1]
				return false // declarations are not uses
			}
		case *ast.CallExpr:
			idx.eventSite(p, f, stack, n)
		case *ast.CompositeLit:
			idx.literalConditionType(p, f, n)
		case *ast.KeyValueExpr:
			if key, ok := n.Key.(*ast.Ident); ok && key.Name == "Reason" {
				if lit, ok := n.Value.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					value, _ := strconv.Unquote(lit.Value)
					r := idx.reason(p.dir, value, nil)
					r.sites = append(r.sites, idx.conditionSite(p, f, stack, lit))
				}
			}
		case *ast.Ident, *ast.SelectorExpr:
			if len(stack) >= 2 {
				if _, inSelector := stack[len(stack)-2].(*ast.SelectorExpr); inSelector {
					return true
				}
			}
			c := idx.constOf(p, f, n.(ast.Expr))
			if c == nil || !isReason(c) {
				return true
			}
			if isEventReasonArg(stack) {
				return true // eventSite records it
			}
			if !setsReason(stack) {
				return true
			}
			target := c
			if isAlias(c) {
				target = idx.constOf(c.pkg, idx.fileOf(c), c.expr)
			}
			r := idx.reason(target.pkg.dir, target.value, target)
			r.sites = append(r.sites, idx.conditionSite(p, f, stack, n.(ast.Expr)))
		}
		return true
	})
}

// setsReason says whether the reason at the top of the stack is being set (a field, an
// argument, a result, an assignment), not compared or switched on.
func setsReason(stack []ast.Node) bool {
	switch parent := stack[len(stack)-2].(type) {
	case *ast.KeyValueExpr, *ast.CompositeLit, *ast.ReturnStmt:
		return true
	case *ast.AssignStmt:
		return true
	case *ast.CallExpr:
		// cmp.Or(f.reason, ReasonX) and the like choose a reason: the message is elsewhere.
		return parent.Args[len(parent.Args)-1] != stack[len(stack)-1] || len(parent.Args) == 1
	}
	return false
}

// eventCall recognises the Event recorders' calls: events.EventRecorder's
// Eventf(regarding, related, type, reason, action, note, args...) and our controllers'
// event(object, type, reason, format, args...). It returns the indexes of the type,
// reason and format arguments.
func eventCall(call *ast.CallExpr) (typeArg, reasonArg, formatArg int, ok bool) {
	sel, isSel := call.Fun.(*ast.SelectorExpr)
	if !isSel {
		return 0, 0, 0, false
	}
	switch {
	case sel.Sel.Name == "Eventf" && len(call.Args) >= 6:
		return 2, 3, 5, true
	case sel.Sel.Name == "event" && len(call.Args) >= 4:
		return 1, 2, 3, true
	}
	return 0, 0, 0, false
}

func isEventReasonArg(stack []ast.Node) bool {
	call, ok := stack[len(stack)-2].(*ast.CallExpr)
	if !ok {
		return false
	}
	_, reasonArg, _, ok := eventCall(call)
	return ok && call.Args[reasonArg] == stack[len(stack)-1]
}

func (idx *codeIndex) eventSite(p *codePackage, f *codeFile, stack []ast.Node, call *ast.CallExpr) {
	typeArg, reasonArg, formatArg, ok := eventCall(call)
	if !ok {
		return
	}
	var values []string
	var def *constDef
	switch e := call.Args[reasonArg].(type) {
	case *ast.BasicLit:
		value, _ := strconv.Unquote(e.Value)
		values = append(values, value)
	case *ast.CallExpr:
		// A reason computed by a function of the package: the literals it returns.
		if fn, ok := e.Fun.(*ast.Ident); ok {
			values = returnedLiterals(p, fn.Name)
		}
	default:
		if def = idx.constOf(p, f, e); def != nil {
			values = append(values, def.value)
		}
	}
	if len(values) == 0 {
		return // a reason passed through a variable: its origin is documented
	}
	eventType := types.ExprString(call.Args[typeArg])
	if sel, ok := call.Args[typeArg].(*ast.SelectorExpr); ok {
		eventType = strings.TrimPrefix(sel.Sel.Name, "EventType")
	}
	s := site{pkg: p.dir, file: f.path, function: enclosingFunction(stack), event: true, eventType: eventType,
		message: idx.format(p, f, call.Args[formatArg], call.Args[formatArg+1:])}
	for _, value := range values {
		r := idx.events[value]
		if r == nil {
			r = &reasonDef{value: value, def: def, pkg: p.dir}
			idx.events[value] = r
		}
		r.sites = append(r.sites, s)
	}
}

// literalConditionType records the string literal types of *Condition composite literals
// (the report's), and the literals a function returns when the type is computed by one.
func (idx *codeIndex) literalConditionType(p *codePackage, f *codeFile, lit *ast.CompositeLit) {
	if lit.Type == nil || !strings.HasSuffix(types.ExprString(lit.Type), "Condition") {
		return
	}
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok || types.ExprString(kv.Key) != "Type" {
			continue
		}
		var values []string
		switch v := kv.Value.(type) {
		case *ast.BasicLit:
			s, _ := strconv.Unquote(v.Value)
			values = append(values, s)
		case *ast.CallExpr:
			if fn, ok := v.Fun.(*ast.Ident); ok {
				values = append(values, returnedLiterals(p, fn.Name)...)
			}
		}
		for _, value := range values {
			if idx.conditionTypes[value] == nil {
				idx.conditionTypes[value] = &conditionTypeDef{value: value, pkg: p.dir,
					doc: "A condition of a `" + types.ExprString(lit.Type) + "`, set in " + f.path + "."}
			}
		}
	}
}

// returnedLiterals are the string literals function name of package p returns.
func returnedLiterals(p *codePackage, name string) []string {
	var out []string
	for _, f := range p.files {
		for _, decl := range f.ast.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Name.Name != name || fn.Recv != nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if ret, ok := n.(*ast.ReturnStmt); ok && len(ret.Results) == 1 {
					if lit, ok := ret.Results[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						s, _ := strconv.Unquote(lit.Value)
						out = append(out, s)
					}
				}
				return true
			})
		}
	}
	return out
}

// conditionSite describes the place where the reason e (the top of stack) is set.
func (idx *codeIndex) conditionSite(p *codePackage, f *codeFile, stack []ast.Node, e ast.Expr) site {
	s := site{pkg: p.dir, file: f.path, function: enclosingFunction(stack)}
	var message ast.Expr
	var formatArgs []ast.Expr
	switch parent := stack[len(stack)-2].(type) {
	case *ast.KeyValueExpr:
		if lit, ok := stack[len(stack)-3].(*ast.CompositeLit); ok {
			message = field(lit, "Message", "message")
			if t := field(lit, "Type", "condition"); t != nil {
				s.conditionType = idx.stringValue(p, f, t)
			}
		}
		s.appendedTo = appendTarget(stack[:len(stack)-2])
	case *ast.CompositeLit:
		s.appendedTo = appendTarget(stack[:len(stack)-1])
		if i := indexOf(parent.Elts, e); i >= 0 && i+1 < len(parent.Elts) {
			message = parent.Elts[i+1]
		}
	case *ast.ReturnStmt:
		if i := indexOf(parent.Results, e); i >= 0 && i+1 < len(parent.Results) {
			message = parent.Results[i+1]
		}
	case *ast.CallExpr:
		if i := indexOf(parent.Args, e); i >= 0 && i+1 < len(parent.Args) {
			message, formatArgs = parent.Args[i+1], parent.Args[i+2:]
		}
		// A helper of the package that sets the condition: setGuard(report, status, reason, message).
		if fn := localFunction(p, parent.Fun); fn != nil {
			s.conditionType = idx.bodyConditionType(p, f, fn.Body)
		}
	case *ast.AssignStmt:
		message = assignedMessage(stack, parent, e)
	}
	if message != nil {
		if _, isLit := message.(*ast.BasicLit); isLit && len(formatArgs) > 0 {
			s.message = idx.format(p, f, message, formatArgs)
		} else {
			s.message = idx.template(p, f, message)
		}
	}
	if s.conditionType == "" {
		s.conditionType = idx.functionConditionType(p, f, stack)
	}
	return s
}

// appendTarget is the list a composite literal at the top of stack is appended to:
// "v.errors" for append(v.errors, problem{...}).
func appendTarget(stack []ast.Node) string {
	if len(stack) < 2 {
		return ""
	}
	call, ok := stack[len(stack)-2].(*ast.CallExpr)
	if !ok || types.ExprString(call.Fun) != "append" || len(call.Args) < 2 {
		return ""
	}
	return types.ExprString(call.Args[0])
}

// localFunction is the function or method of package p a call names, if it names one.
func localFunction(p *codePackage, fun ast.Expr) *ast.FuncDecl {
	name := ""
	switch fun := fun.(type) {
	case *ast.Ident:
		name = fun.Name
	case *ast.SelectorExpr:
		name = fun.Sel.Name
	default:
		return nil
	}
	for _, f := range p.files {
		for _, decl := range f.ast.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Name.Name == name && fn.Body != nil {
				if _, isSel := fun.(*ast.SelectorExpr); isSel == (fn.Recv != nil) {
					return fn
				}
			}
		}
	}
	return nil
}

// assignedMessage finds the message set with a reason assigned to x.Reason: in the same
// assignment, or assigned to x.Message in the statements that follow in the same block.
func assignedMessage(stack []ast.Node, assign *ast.AssignStmt, e ast.Expr) ast.Expr {
	i := indexOf(assign.Rhs, e)
	if i < 0 || len(assign.Lhs) != len(assign.Rhs) {
		return nil
	}
	reasonField, ok := assign.Lhs[i].(*ast.SelectorExpr)
	if !ok || reasonField.Sel.Name != "Reason" {
		return nil
	}
	target := types.ExprString(reasonField.X)
	for j, lhs := range assign.Lhs {
		if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "Message" && types.ExprString(sel.X) == target {
			return assign.Rhs[j]
		}
	}
	var list []ast.Stmt
	switch block := stack[len(stack)-3].(type) {
	case *ast.BlockStmt:
		list = block.List
	case *ast.CaseClause:
		list = block.Body
	}
	var parts []ast.Expr
	for k, stmt := range list {
		if stmt != assign {
			continue
		}
		for _, next := range list[k+1:] {
			a, ok := next.(*ast.AssignStmt)
			if !ok || len(a.Lhs) != 1 || len(a.Rhs) != 1 {
				continue
			}
			sel, ok := a.Lhs[0].(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Message" || types.ExprString(sel.X) != target {
				continue
			}
			switch {
			case a.Tok == token.ASSIGN && len(parts) == 0:
				parts = append(parts, a.Rhs[0])
			case a.Tok == token.ADD_ASSIGN && len(parts) > 0:
				parts = append(parts, a.Rhs[0])
			}
		}
	}
	if len(parts) == 0 {
		return nil
	}
	message := parts[0]
	for _, p := range parts[1:] {
		message = &ast.BinaryExpr{X: message, Op: token.ADD, Y: p}
	}
	return message
}

// functionConditionType is the condition type of the function around the top of the
// stack, when it builds conditions of one type only.
func (idx *codeIndex) functionConditionType(p *codePackage, f *codeFile, stack []ast.Node) string {
	for i := len(stack) - 1; i >= 0; i-- {
		if fn, ok := stack[i].(*ast.FuncDecl); ok {
			return idx.bodyConditionType(p, f, fn.Body)
		}
	}
	return ""
}

// bodyConditionType is the condition type a function body builds, when it builds
// conditions of one type only.
func (idx *codeIndex) bodyConditionType(p *codePackage, f *codeFile, body ast.Node) string {
	if body == nil {
		return ""
	}
	found := map[string]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok || lit.Type == nil || !strings.HasSuffix(types.ExprString(lit.Type), "Condition") {
			return true
		}
		if t := field(lit, "Type"); t != nil {
			if v := idx.stringValue(p, f, t); v != "" {
				found[v] = true
			}
		}
		return true
	})
	if len(found) != 1 {
		return ""
	}
	for v := range found {
		return v
	}
	return ""
}

// stringValue is the value of a string literal or constant, "" for anything else.
func (idx *codeIndex) stringValue(p *codePackage, f *codeFile, e ast.Expr) string {
	if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
		s, _ := strconv.Unquote(lit.Value)
		return s
	}
	if c := idx.constOf(p, f, e); c != nil {
		return c.value
	}
	return ""
}

func field(lit *ast.CompositeLit, names ...string) ast.Expr {
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		for _, name := range names {
			if types.ExprString(kv.Key) == name {
				return kv.Value
			}
		}
	}
	return nil
}

func indexOf(list []ast.Expr, e ast.Expr) int {
	for i, x := range list {
		if x == e {
			return i
		}
	}
	return -1
}

func enclosingFunction(stack []ast.Node) string {
	for i := len(stack) - 1; i >= 0; i-- {
		if fn, ok := stack[i].(*ast.FuncDecl); ok {
			if fn.Recv != nil && len(fn.Recv.List) == 1 {
				recv := types.ExprString(fn.Recv.List[0].Type)
				return strings.TrimPrefix(recv, "*") + "." + fn.Name.Name
			}
			return fn.Name.Name
		}
	}
	return ""
}

// template renders a message expression: literal text as it is, constants by their
// value, and everything computed at run time as <the expression>.
func (idx *codeIndex) template(p *codePackage, f *codeFile, e ast.Expr) string {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			s, _ := strconv.Unquote(e.Value)
			return s
		}
	case *ast.ParenExpr:
		return idx.template(p, f, e.X)
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			return idx.template(p, f, e.X) + idx.template(p, f, e.Y)
		}
	case *ast.Ident, *ast.SelectorExpr:
		if c := idx.constOf(p, f, e); c != nil && c.value != "" {
			return c.value
		}
	case *ast.CallExpr:
		if sel, ok := e.Fun.(*ast.SelectorExpr); ok {
			switch {
			case types.ExprString(sel.X) == "fmt" && (sel.Sel.Name == "Sprintf" || sel.Sel.Name == "Errorf") && len(e.Args) > 0:
				return idx.format(p, f, e.Args[0], e.Args[1:])
			case sel.Sel.Name == "Error" && len(e.Args) == 0:
				return "<" + types.ExprString(sel.X) + ">"
			}
		}
	}
	return "<" + types.ExprString(e) + ">"
}

// format renders a Printf-style format with its arguments.
func (idx *codeIndex) format(p *codePackage, f *codeFile, format ast.Expr, args []ast.Expr) string {
	text := idx.template(p, f, format)
	var b strings.Builder
	next := 0
	for i := 0; i < len(text); i++ {
		if text[i] != '%' || i+1 >= len(text) {
			b.WriteByte(text[i])
			continue
		}
		j := i + 1
		for j < len(text) && strings.IndexByte("+-# 0123456789.*[]", text[j]) >= 0 {
			j++
		}
		if j >= len(text) {
			b.WriteString(text[i:])
			break
		}
		verb := text[j]
		if verb == '%' {
			b.WriteByte('%')
			i = j
			continue
		}
		arg := "<?>"
		if next < len(args) {
			arg = idx.template(p, f, args[next])
			next++
		}
		if verb == 'q' {
			arg = `"` + arg + `"`
		}
		b.WriteString(arg)
		i = j
	}
	return b.String()
}

func commentText(g *ast.CommentGroup) string {
	return strings.Join(strings.Fields(g.Text()), " ")
}

// sortedValues are a map's values, ordered by key.
func sortedValues[V any](m map[string]V, key func(V) string) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out
}

func sortedPackages(m map[string]*codePackage) []*codePackage {
	return sortedValues(m, func(p *codePackage) string { return p.dir })
}

func sortedConsts(m map[string]*constDef) []*constDef {
	return sortedValues(m, func(c *constDef) string { return c.name })
}

// writeConditions writes conditions.md and events.md.
func writeConditions(root, out string) error {
	idx, err := loadCode(root)
	if err != nil {
		return err
	}
	if err := idx.scan(); err != nil {
		return err
	}
	idx.leaveToTables()
	conditions, err := idx.conditionsPage()
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(out, "conditions.md"), []byte(conditions)); err != nil {
		return err
	}
	events, err := idx.eventsPage()
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(out, "events.md"), []byte(events))
}

// leaveToTables drops what a table documents: the condition types, reasons and Events
// whose constants a table's package declares.
func (idx *codeIndex) leaveToTables() {
	for value, t := range idx.conditionTypes {
		if fromTable(t.pkg) {
			delete(idx.conditionTypes, value)
		}
	}
	for key, r := range idx.reasons {
		if fromTable(r.pkg) {
			delete(idx.reasons, key)
		}
	}
	for value, e := range idx.events {
		if e.def != nil && fromTable(e.def.pkg.dir) {
			delete(idx.events, value)
		}
	}
}
