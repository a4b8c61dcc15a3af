package config

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/settings.md's settings table from the tags")

// settingsDoc is the page that holds the generated settings table, between
// its markers.
const (
	settingsDoc   = "../../docs/settings.md"
	settingsBegin = "<!-- settings:begin"
	settingsEnd   = "<!-- settings:end -->"
)

// TestSettingsDoc checks that docs/settings.md's table is the one Markdown
// writes from the tags; with -update (make docs) it writes it there.
func TestSettingsDoc(t *testing.T) {
	doc, err := os.ReadFile(settingsDoc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	begin := strings.Index(text, settingsBegin)
	end := strings.Index(text, settingsEnd)
	if begin < 0 || end < begin {
		t.Fatalf("%s has no %q … %q markers", settingsDoc, settingsBegin, settingsEnd)
	}
	begin += strings.Index(text[begin:], "\n") + 1
	var table bytes.Buffer
	if err := Markdown(&table); err != nil {
		t.Fatal(err)
	}
	if text[begin:end] == table.String() {
		return
	}
	if *update {
		if err := os.WriteFile(settingsDoc, []byte(text[:begin]+table.String()+text[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/settings.md's settings table differs from internal/config's tags: run `make docs` (go test ./internal/config/ -run TestSettingsDoc -update) and commit it")
}

// TestMarkdownRows checks that the table has a row per setting, with its
// default and description.
func TestMarkdownRows(t *testing.T) {
	var table bytes.Buffer
	if err := Markdown(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| variable | default | meaning |\n|---|---|---|\n",
		"| `LONGHAUL_HTTP_ADDR` | `127.0.0.1:8080` | API listen address |\n",
		"| `LONGHAUL_SKILLS_DIR` |  | extra agent and skill files, loaded over the built-ins |\n",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("settings table lacks %q:\n%s", want, table.String())
		}
	}
}
