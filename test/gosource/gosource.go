// Package gosource reads facts out of another module's Go source, for tests that must
// notice when an upstream release changes them (addon-framework's controllers and
// indexes, the GitOps operator's defaults).
package gosource

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
)

// StringConstants are the string constants a Go file declares, by name.
func StringConstants(path string) (map[string]string, error) {
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	out := map[string]string{}
	for _, decl := range file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs, ok := spec.(*ast.ValueSpec)
			if !ok {
				continue
			}
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					out[name.Name], _ = strconv.Unquote(lit.Value)
				}
			}
		}
	}
	return out, nil
}
