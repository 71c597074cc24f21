package generated

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
)

// userDocs are the hand-written pages: README.md, CONTRIBUTING.md, SECURITY.md and docs/
// but the generated docs/reference.
func userDocs(t *testing.T) []string {
	t.Helper()
	root := repoRoot(t)
	pages := []string{"README.md", "CONTRIBUTING.md", "SECURITY.md"}
	require.NoError(t, filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() && rel == "docs/reference" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(rel, ".md") {
			pages = append(pages, rel)
		}
		return nil
	}))
	return pages
}

var (
	shellFence  = regexp.MustCompile("^```(sh|shell|bash|console)\\s*$")
	runByMarker = regexp.MustCompile(`^<!-- (run by|illustrative)\b.*-->$`)
	testName    = regexp.MustCompile(`\bTest[A-Z][A-Za-z0-9_]*`)
	makeTarget  = regexp.MustCompile("`make ([a-z][a-z0-9-]*)")
)

// TestEveryDocsCommandSaysWhoRunsIt: every shell block of the hand-written docs is
// preceded by `<!-- run by: ... -->`, naming the test or `make` target that runs the same
// commands, or by `<!-- illustrative: ... -->` (docs/testing.md, "Commands in these
// docs"). Each test and make target a marker names must exist.
func TestEveryDocsCommandSaysWhoRunsIt(t *testing.T) {
	root := repoRoot(t)
	tests := definedTests(t, root)
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	for _, page := range userDocs(t) {
		lines := readLines(t, filepath.Join(root, page))
		inFence := false
		for i, line := range lines {
			if strings.HasPrefix(line, "```") {
				opening := !inFence
				inFence = !inFence
				if !opening || !shellFence.MatchString(line) {
					continue
				}
				marker := previousNonBlank(lines, i)
				if !assert.Regexp(t, runByMarker, marker, "%s:%d: a shell block without `<!-- run by: TestX (where) -->` or "+
					"`<!-- illustrative: why -->` on the line above it", page, i+1) {
					continue
				}
				for _, name := range testName.FindAllString(marker, -1) {
					assert.Contains(t, tests, name, "%s:%d: the marker names %s, which no _test.go file defines", page, i+1, name)
				}
				for _, m := range makeTarget.FindAllStringSubmatch(marker, -1) {
					assert.Regexp(t, "(?m)^"+regexp.QuoteMeta(m[1])+":", string(makefile), "%s:%d: the marker names make %s, which the Makefile "+
						"does not define", page, i+1, m[1])
				}
			}
		}
	}
}

// definedTests are the names of the test functions of the repository.
func definedTests(t *testing.T, root string) map[string]bool {
	t.Helper()
	defined := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)
	tests := map[string]bool{}
	require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range defined.FindAllStringSubmatch(string(raw), -1) {
			tests[m[1]] = true
		}
		return nil
	}))
	return tests
}

var (
	markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpan     = regexp.MustCompile("(`+)[^`]*?(`+)")
	headingLine  = regexp.MustCompile(`^#{1,6} (.*)$`)
)

// TestDocsLinksResolve: every relative link of the docs, the generated reference
// included, names a file that exists, and every #anchor a heading of its page.
func TestDocsLinksResolve(t *testing.T) {
	root := repoRoot(t)
	pages := userDocs(t)
	for name := range filesUnder(t, filepath.Join(root, "docs", "reference")) {
		pages = append(pages, "docs/reference/"+name)
	}
	for _, page := range pages {
		inFence := false
		for i, line := range readLines(t, filepath.Join(root, page)) {
			if strings.HasPrefix(line, "```") {
				inFence = !inFence
			}
			if inFence {
				continue
			}
			for _, m := range markdownLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, "``"), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, fragment, _ := strings.Cut(target, "#")
				path := filepath.Join(root, page)
				if file != "" {
					path = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
				}
				_, err := os.Stat(path)
				if !assert.NoError(t, err, "%s:%d: link %s: no such file", page, i+1, target) || fragment == "" {
					continue
				}
				assert.Contains(t, anchors(t, path), fragment, "%s:%d: link %s: no such heading", page, i+1, target)
			}
		}
	}
}

// anchors are the anchors GitHub makes of a Markdown page's headings.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	found := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range readLines(t, path) {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		m := headingLine.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		a := slug(m[1])
		if n := seen[a]; n > 0 {
			found[a+"-"+strconv.Itoa(n)] = true
		} else {
			found[a] = true
		}
		seen[a]++
	}
	return found
}

// slug is GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes.
func slug(heading string) string {
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestTroubleshootingNamesEveryReason: the reason tables of docs/troubleshooting.md, which
// `make docs` renders between their markers from the tables of pkg/api/v1beta1,
// pkg/api/v1alpha1 and pkg/contract (TestDocsReferenceIsCurrent fails when one is not what
// the code says), have a row for every condition reason, each with its four cells: a `|`
// inside a text is escaped, so that the table renders.
func TestTroubleshootingNamesEveryReason(t *testing.T) {
	lines := readLines(t, filepath.Join(repoRoot(t), "docs", "troubleshooting.md"))
	rows := map[string]bool{}
	inBlock := false
	for i, line := range lines {
		switch {
		case strings.HasPrefix(line, "<!-- BEGIN generated: reasons of "):
			inBlock = true
		case strings.HasPrefix(line, "<!-- END generated -->"):
			inBlock = false
		case inBlock && strings.HasPrefix(line, "|") && !strings.HasPrefix(line, "| ---") && !strings.HasPrefix(line, "| condition |"):
			cells := markdownRowCells(line)
			if assert.Len(t, cells, 4, "docs/troubleshooting.md:%d: a row of a reason table has 4 cells (condition, reason, "+
				"meaning, what to do): %s", i+1, line) {
				rows[strings.Trim(cells[1], "`")] = true
			}
		}
	}
	checked := 0
	for _, table := range contract.ReasonTables {
		for _, r := range table.Reasons {
			if len(r.Conditions) == 0 {
				continue
			}
			checked++
			assert.True(t, rows[r.Name], "docs/troubleshooting.md has no row for the reason %s (%s) in its generated reason "+
				"tables: run `make docs` (hack/docgen's reasonBlocks says which block shows which conditions)", r.Name, table.Name)
		}
	}
	require.NotZero(t, checked)
}

// markdownRowCells are the cells of a Markdown table's row, trimmed; an escaped `\|` does
// not end a cell.
func markdownRowCells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			cell.WriteString(`\|`)
			i++
		case row[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(row[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

// TestREADMEStatesTheTwoCommands: the README opens with `make demo` and `make test`, and
// CI runs the same test command.
func TestREADMEStatesTheTwoCommands(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	assert.Regexp(t, "(?m)^make demo ", string(readme))
	assert.Regexp(t, "(?m)^make test ", string(readme))
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^make test$`, string(ci))
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var lines []string
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		lines = append(lines, scanner.Text())
	}
	require.NoError(t, scanner.Err())
	return lines
}

func previousNonBlank(lines []string, i int) string {
	for j := i - 1; j >= 0; j-- {
		if strings.TrimSpace(lines[j]) != "" {
			return strings.TrimSpace(lines[j])
		}
	}
	return ""
}

// userPages are the pages written for users: README.md and every page under docs/ but the
// developers' records in docs/dev (CONTRIBUTING.md and SECURITY.md are for contributors and
// reporters). withReference adds the generated docs/reference.
func userPages(t *testing.T, withReference bool) []string {
	t.Helper()
	var pages []string
	for _, page := range userDocs(t) {
		if page == "README.md" || strings.HasPrefix(page, "docs/") && !strings.HasPrefix(page, "docs/dev/") {
			pages = append(pages, page)
		}
	}
	if withReference {
		for name := range filesUnder(t, filepath.Join(repoRoot(t), "docs", "reference")) {
			if strings.HasSuffix(name, ".md") {
				pages = append(pages, "docs/reference/"+name)
			}
		}
	}
	require.Contains(t, pages, "README.md")
	require.Contains(t, pages, "docs/testing.md")
	return pages
}

// labNotebook are the marks of a developer's notebook in a user page, each with what it is.
// Proxies: whether a module proxy serves a module, a version or a repository is a fact of one
// proxy on one day (proxy.golang.org, a private one, a mirror not yet synced), not of
// gitops-addon; a user page says what our build does ("this project does not build
// argocd-agent: build it yourself"), docs/dev/dependencies.md what the proxy served and when.
// The patterns need "the" or "module" before "proxy", so kube-proxy, the principal's resource
// proxy and HTTP proxies stay allowed, and so does the current fact "built from source through
// the Go module proxy".
var labNotebook = []struct {
	what    string
	pattern *regexp.Regexp
}{
	{"a date (of a run, of a finding)", regexp.MustCompile(`\b(19|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])\b`)},
	{"a session number", regexp.MustCompile(`(?i)\bsessions?[\s-]*\d+`)},
	{"what a module proxy served", regexp.MustCompile(`(?i)\b(module|the)\s+proxy\s+(serves|served|lists|listed|refuses|refused|offers|offered|` +
		`(does|did)\s+not\s+serve|doesn't\s+serve)\b|\bserved\s+by\s+the\s+(go\s+)?(module\s+)?proxy\b|` +
		`\bnot\s+(on|in|served\s+by|listed\s+by)\s+the\s+(go\s+)?(module\s+)?proxy\b`)},
	{"an investigation left open", regexp.MustCompile(`(?i)\bnot\s+looked\s+into|\bcause\s+is\s+(not\s+known|unknown)|\btried\s+and\s+reverted|` +
		`\bno\s+issue\s+or\s+pull\s+request\s+can\s+be\s+opened`)},
}

// TestUserPagesHoldNoLabNotebook: the user pages (userPages, the generated reference aside)
// hold current facts only, each with its command. A past run, its date, a session, what a
// module proxy served on a day, an investigation not finished belong in docs/dev
// (docs/dev/README.md). A page is read whole, so a phrase wrapped over two lines is found. A
// timestamp in example output (2026-01-02T03:04:05Z) is not a run's date and is allowed.
func TestUserPagesHoldNoLabNotebook(t *testing.T) {
	root := repoRoot(t)
	for _, page := range userPages(t, false) {
		text := strings.Join(readLines(t, filepath.Join(root, page)), "\n")
		for _, mark := range labNotebook {
			for _, loc := range mark.pattern.FindAllStringIndex(text, -1) {
				if mark.what == labNotebook[0].what && loc[1] < len(text) && text[loc[1]] == 'T' {
					continue
				}
				assert.Fail(t, "a lab note in a user page", "%s:%d: %s, %q: keep the current figure with the command that "+
					"measures it, and move the run, its date or the investigation to docs/dev/ (test-runs.md, "+
					"benchmark-history.md, dependencies.md)", page, strings.Count(text[:loc[0]], "\n")+1, mark.what, text[loc[0]:loc[1]])
			}
		}
	}
}

var (
	linkDefinition = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)`)
	htmlLink       = regexp.MustCompile(`(?i)\b(?:href|src)\s*=\s*["']([^"']+)["']`)
	githubTestURL  = regexp.MustCompile(`(?i)^https?://(?:www\.)?(?:github\.com/gitops-addon/gitops-addon/(?:blob|tree|raw)/[^/]+|` +
		`raw\.githubusercontent\.com/gitops-addon/gitops-addon/[^/]+)/test(?:[/?#]|$)`)
)

// TestUserPagesDoNotLinkIntoTest: no user page (README.md and docs/ outside docs/dev, the
// generated reference included) links into the repository's test/ directory, by a relative
// link, one from the repository's root ("/test/..."), or a GitHub URL of this repository:
// the tests' code is not documentation, and moves with them. Link the page that describes
// what a test proves (docs/testing.md), or keep what users apply outside test/.
// CONTRIBUTING.md, a developer's page, may.
func TestUserPagesDoNotLinkIntoTest(t *testing.T) {
	root := repoRoot(t)
	for _, page := range userPages(t, true) {
		inFence := false
		for i, line := range readLines(t, filepath.Join(root, page)) {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inFence = !inFence
			}
			if inFence {
				continue
			}
			line = codeSpan.ReplaceAllString(line, "``")
			var targets []string
			for _, re := range []*regexp.Regexp{markdownLink, linkDefinition, htmlLink} {
				for _, m := range re.FindAllStringSubmatch(line, -1) {
					targets = append(targets, m[1])
				}
			}
			for _, target := range targets {
				assert.False(t, linksIntoTest(root, page, target), "%s:%d: the link %s leads into test/: link the docs that "+
					"describe it (docs/testing.md says what each test proves), or keep what users read outside test/", page, i+1, target)
			}
		}
	}
}

// linksIntoTest says whether a link of page leads into the repository's test/ directory.
func linksIntoTest(root, page, target string) bool {
	if strings.Contains(target, "://") {
		return githubTestURL.MatchString(target)
	}
	if strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
		return false
	}
	file, _, _ := strings.Cut(target, "#")
	file, _, _ = strings.Cut(file, "?")
	path := filepath.Join(filepath.Dir(filepath.Join(root, page)), filepath.FromSlash(file))
	if strings.HasPrefix(file, "/") {
		path = filepath.Join(root, filepath.FromSlash(file))
	}
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return false
	}
	rel = filepath.ToSlash(rel)
	return rel == "test" || strings.HasPrefix(rel, "test/")
}
