// Package tooltest gives tests the built-in tools as a model call offers
// them, for measuring what they cost a model's window.
package tooltest

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/toolset"
	"github.com/longhaul-dev/longhaul/skills"
	openai "github.com/sashabaranov/go-openai"
)

// Builtin returns the built-in tools' definitions as a model call offers
// them (activities/answer.go offeredTools), HTTP tools of the built-in
// skills included. The tools that would reach out point at a closed port.
func Builtin(t testing.TB) []openai.Tool {
	t.Helper()
	cat, err := skills.Load(skills.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	set, err := toolset.Build(context.Background(), cat, toolset.Options{
		SearchURL: "http://127.0.0.1:9",
		LookupEnv: func(string) (string, bool) { return "http://127.0.0.1:9", true },
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	defs, err := set.Registry.Definitions(set.Registry.Names())
	if err != nil {
		t.Fatal(err)
	}
	var out []openai.Tool
	for _, d := range defs {
		out = append(out, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: d.Name, Description: d.Description, Parameters: d.Parameters,
		}})
	}
	return out
}
