package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/gitops-addon/gitops-addon/pkg/cmd"
	"github.com/gitops-addon/gitops-addon/pkg/version"
)

// writeCLI writes one page per command of the gitops-addon binary into out/cli, with
// cobra's own markdown generator over the command tree the binary runs.
func writeCLI(_, out string) error {
	// Defaults that come from the environment or the build are written as what they
	// stand for, so that the pages do not depend on where they were generated.
	if err := os.Unsetenv("POD_NAMESPACE"); err != nil {
		return err
	}
	version.Version = "v<version>"

	root := cmd.NewRootCommand()
	disableAutoGenTag(root)
	dir := filepath.Join(out, "cli")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	prepend := func(string) string { return generatedNotice }
	link := func(name string) string { return name }
	return doc.GenMarkdownTreeCustom(root, dir, prepend, link)
}

// disableAutoGenTag drops cobra's "Auto generated ... on <date>" footer from every page:
// a date would make the pages differ on every run.
func disableAutoGenTag(c *cobra.Command) {
	c.DisableAutoGenTag = true
	for _, sub := range c.Commands() {
		disableAutoGenTag(sub)
	}
}
