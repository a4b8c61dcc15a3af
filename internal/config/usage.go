package config

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"text/template"

	"github.com/kelseyhightower/envconfig"
)

// Usage writes the settings table (variable, default, meaning) to w, as
// `longhaul --help` prints it.
func Usage(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  VARIABLE\tDEFAULT\tMEANING")
	err := envconfig.Usagef("", &Config{}, tw, "{{range .}}  {{usage_key .}}\t{{usage_default .}}\t{{usage_description .}}\n{{end}}")
	if err != nil {
		return err
	}
	return tw.Flush()
}

// markdownTable is the settings table in Markdown, one row a setting, from
// the same tags as Usage's.
var markdownTable = template.Must(template.New("settings").Funcs(template.FuncMap{
	"code": func(s string) string {
		if s == "" {
			return ""
		}
		return "`" + s + "`"
	},
	// cell keeps a description one cell: a | would end it, a <name> would
	// be read as HTML.
	"cell": func(s string) string { return strings.NewReplacer("|", `\|`, "<", "&lt;").Replace(s) },
}).Parse("| variable | default | meaning |\n|---|---|---|\n" +
	"{{range .}}| {{code .Key}} | {{code (.Tags.Get \"default\")}} | {{cell (.Tags.Get \"desc\")}} |\n{{end}}"))

// Markdown writes the settings table (variable, default, meaning) to w as
// a Markdown table: what `longhaul settings` prints and docs/settings.md
// holds.
func Markdown(w io.Writer) error {
	return envconfig.Usaget("", &Config{}, w, markdownTable)
}
