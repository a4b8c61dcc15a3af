// Package toolset assembles a worker's tools from the settings and the agent
// catalog: the built-in tools, web_search when a search endpoint is set, the
// memory tools when memory is on, the backlog tools on the conversation
// store, document_search on the document store, the HTTP tools skill files declare (each only while the variables
// its requires_env names are set), and the tools of the configured MCP
// servers. It exists so that the commands and the test environment build the
// same registry the same way, and so that the agent files are checked against
// the tools a worker will really have.
package toolset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/internal/docsearch"
	"github.com/longhaul-dev/longhaul/internal/mcp"
	"github.com/longhaul-dev/longhaul/internal/memory"
	"github.com/longhaul-dev/longhaul/internal/store"
	"github.com/longhaul-dev/longhaul/internal/tools"
	"github.com/longhaul-dev/longhaul/internal/usercreds"
	"github.com/longhaul-dev/longhaul/skills"
)

// Options says which tools to build.
type Options struct {
	// SearchURL is the SearXNG-compatible endpoint of web_search; empty
	// leaves web_search out.
	SearchURL string
	// MCP is the parsed MCP server configuration; nil means none.
	MCP *mcp.Config
	// Fetch configures web_fetch.
	Fetch tools.WebFetchOptions
	// LookupEnv resolves ${VAR} in HTTP tools and MCP settings; nil means
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Extra are more tools (tests' probes).
	Extra []tools.Tool
	// Credentials, when set (LONGHAUL_TOKEN_KEY), gives "auth": "oauth"
	// MCP servers and ${user.secret:NAME} headers of HTTP tools the calling
	// user's own credentials; without it those are refused.
	Credentials *usercreds.Service
	// Memory, when set (LONGHAUL_EMBED_MODEL), adds the memory tools;
	// nil leaves them out, and the agents that name them run without.
	Memory *memory.Service
	// Backlog, when set (the conversation store), adds the backlog tools
	// of the built-in skill backlog_manager; nil leaves them out.
	Backlog store.Backlog
	// Docs, when set (the document store), adds document_search, the
	// documents skill's tool; nil leaves it out. DocsEmbedder embeds its
	// queries with the model the chunks were embedded with
	// (LONGHAUL_EMBED_MODEL); nil searches by words alone. DocsMaxChars
	// bounds the text of one search's hits (zero: the tool's default).
	Docs         docsearch.Store
	DocsEmbedder docsearch.Embedder
	DocsMaxChars int
}

// builtin is one entry of the built-in tools: a new built-in tool is one
// more entry here.
type builtin struct {
	names []string
	// build builds the tools, or none when a setting they need is missing.
	build func(Options) ([]tools.Tool, error)
	// off says which setting switches them on, for the start-up warning
	// about agents that name them while they are off.
	off string
}

var builtins = []builtin{
	{names: []string{tools.CurrentTimeName}, build: func(Options) ([]tools.Tool, error) {
		return []tools.Tool{&tools.CurrentTime{}}, nil
	}},
	{names: []string{tools.WebFetchName}, build: func(o Options) ([]tools.Tool, error) {
		return []tools.Tool{tools.NewWebFetch(o.Fetch)}, nil
	}},
	{names: []string{tools.WebSearchName}, off: "LONGHAUL_SEARCH_URL is not set (web_search)", build: func(o Options) ([]tools.Tool, error) {
		if o.SearchURL == "" {
			return nil, nil
		}
		ws, err := tools.NewWebSearch(tools.WebSearchOptions{BaseURL: o.SearchURL})
		if err != nil {
			return nil, fmt.Errorf("LONGHAUL_SEARCH_URL: %w", err)
		}
		return []tools.Tool{ws}, nil
	}},
	{names: memory.ToolNames, off: "LONGHAUL_EMBED_MODEL is not set, so memory is off (memory_*)", build: func(o Options) ([]tools.Tool, error) {
		if o.Memory == nil {
			return nil, nil
		}
		return memory.Tools(o.Memory), nil
	}},
	{names: tools.BacklogToolNames, off: "this process has no conversation store (backlog_*)", build: func(o Options) ([]tools.Tool, error) {
		if o.Backlog == nil {
			return nil, nil
		}
		return tools.BacklogTools(o.Backlog), nil
	}},
	{names: []string{longhaul.DocumentSearchTool}, off: "this process has no document store (document_search)", build: func(o Options) ([]tools.Tool, error) {
		if o.Docs == nil {
			return nil, nil
		}
		return []tools.Tool{docsearch.New(o.Docs, o.DocsEmbedder, o.DocsMaxChars)}, nil
	}},
}

// Known returns the function the catalog's validation uses to tell whether
// a tool name can exist on a worker with these options: a built-in (even one
// switched off by a missing setting, such as web_search, which is then
// offered to no agent), an Extra tool, or a tool of a configured MCP server
// ("<server>__<tool>"; its tools are only known once it answers).
func Known(opts Options) func(string) bool {
	known := map[string]bool{}
	for _, b := range builtins {
		for _, n := range b.names {
			known[n] = true
		}
	}
	for _, t := range opts.Extra {
		known[t.Name()] = true
	}
	return func(name string) bool {
		if known[name] {
			return true
		}
		if server, _, ok := strings.Cut(name, "__"); ok && opts.MCP != nil {
			_, ok := opts.MCP.Servers[server]
			return ok
		}
		return false
	}
}

// Set is a worker's tools: the registry and what keeps MCP sessions alive.
type Set struct {
	Registry *tools.Registry
	mcp      *mcp.Manager
}

// Build builds the tools and connects the MCP servers (waiting for each
// server's first attempt; a server that is down is logged and retried in
// the background). Close the Set when done.
func Build(ctx context.Context, cat *skills.Catalog, opts Options, log *slog.Logger) (*Set, error) {
	var list []tools.Tool
	for _, b := range builtins {
		ts, err := b.build(opts)
		if err != nil {
			return nil, err
		}
		list = append(list, ts...)
	}
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	// off says, per tool left out for a missing setting, why.
	off := map[string]string{}
	for _, b := range builtins {
		for _, n := range b.names {
			if b.off != "" {
				off[n] = b.off
			}
		}
	}
	for _, h := range cat.HTTPTools() {
		if missing := unsetEnv(h.RequiresEnv, lookup); len(missing) > 0 {
			off[h.Name] = strings.Join(missing, ", ") + " not set (requires_env of skill " + h.Skill + ")"
			continue
		}
		t, err := tools.NewHTTPTool(h, tools.HTTPToolOptions{LookupEnv: opts.LookupEnv, UserSecret: userSecret(opts.Credentials)})
		if err != nil {
			return nil, fmt.Errorf("http tool %q of skill %s: %w", h.Name, h.Skill, err)
		}
		list = append(list, t)
	}
	list = append(list, opts.Extra...)
	reg, err := tools.NewRegistry(list...)
	if err != nil {
		return nil, err
	}
	s := &Set{Registry: reg}
	if opts.MCP != nil && len(opts.MCP.Servers) > 0 {
		s.mcp = mcp.New(*opts.MCP, reg, log)
		if opts.LookupEnv != nil {
			s.mcp.LookupEnv = opts.LookupEnv
		}
		if opts.Credentials != nil {
			s.mcp.UserTokens = opts.Credentials
		}
		// A user's own listing of an OAuth server adds only the tools an
		// agent names: a user's server must not widen what any agent may call.
		named := map[string]bool{}
		for _, a := range cat.Agents() {
			for _, t := range cat.AgentTools(a) {
				named[t] = true
			}
		}
		s.mcp.Named = func(name string) bool { return named[name] }
		if err := s.mcp.Start(ctx); err != nil {
			s.mcp.Close()
			return nil, err
		}
		for _, st := range s.mcp.Servers() {
			if st.Connected {
				log.Info("MCP server connected", "server", st.Name, "transport", st.Transport, "tools", st.Tools)
			} else {
				log.Warn("MCP server not reachable; retrying in the background", "server", st.Name, "transport", st.Transport, "error", st.Err)
			}
		}
	}
	if missing := withoutTools(cat, reg, off); len(missing) > 0 {
		for _, m := range missing {
			log.Warn("agent runs without some of its tools", "agent", m.agent, "tools", m.tools, "why", m.why)
		}
	}
	return s, nil
}

// userSecret resolves ${user.secret:NAME} from the user's secrets, or is
// nil without credentials.
func userSecret(c *usercreds.Service) func(ctx context.Context, user, name string) (string, error) {
	if c == nil {
		return nil
	}
	return func(ctx context.Context, user, name string) (string, error) {
		v, err := c.Secret(ctx, user, name)
		if errors.Is(err, usercreds.ErrNoSecret) {
			return "", fmt.Errorf("%w: %w", tools.ErrNoUserSecret, err)
		}
		return v, err
	}
}

// Close ends the MCP sessions and their server processes.
func (s *Set) Close() error {
	if s == nil || s.mcp == nil {
		return nil
	}
	err := s.mcp.Close()
	if errors.Is(err, mcp.ErrClosed) {
		return nil
	}
	return err
}

type missingTools struct {
	agent string
	tools []string
	why   string
}

// unsetEnv returns the names of vars that are unset or empty.
func unsetEnv(vars []string, lookup func(string) (string, bool)) []string {
	var out []string
	for _, v := range vars {
		if s, ok := lookup(v); !ok || s == "" {
			out = append(out, v)
		}
	}
	return out
}

// withoutTools lists, per agent, the tools its skills name that this worker
// does not have yet, and why: off holds the reasons of tools left out for
// a missing setting; any other is an MCP tool whose server has not
// answered.
func withoutTools(cat *skills.Catalog, reg *tools.Registry, off map[string]string) []missingTools {
	var out []missingTools
	for _, a := range cat.Agents() {
		var names []string
		for _, t := range cat.AgentTools(a) {
			if !reg.Has(t) {
				names = append(names, t)
			}
		}
		if len(names) == 0 {
			continue
		}
		sort.Strings(names)
		var whys []string
		for _, n := range names {
			w, ok := off[n]
			if !ok {
				w = "their MCP server has not answered yet"
			}
			if !slices.Contains(whys, w) {
				whys = append(whys, w)
			}
		}
		why := strings.Join(whys, "; ")
		out = append(out, missingTools{agent: a.ID, tools: names, why: why})
	}
	return out
}
