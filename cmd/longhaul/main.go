// Command longhaul is a durable agent engine: an OpenAI-compatible chat API
// whose every request is a Temporal workflow. See `longhaul --help`.
package main

import (
	"os"

	"github.com/longhaul-dev/longhaul/internal/command"
)

func main() { os.Exit(command.Main(os.Args[1:], os.Stdout, os.Stderr)) }
