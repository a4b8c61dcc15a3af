package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// ErrUnknownTool is returned (wrapped) when a tool name is not registered.
var ErrUnknownTool = errors.New("unknown tool")

// Definition is a tool as it is declared to the model.
type Definition struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Registry is the set of tools with their compiled argument schemas. The
// tools given to NewRegistry are fixed; groups of tools that come and go at
// run time (an MCP server's) are replaced whole with SetGroup. It is safe for
// concurrent use.
type Registry struct {
	mu      sync.RWMutex
	entries map[string]entry
	names   []string
}

type entry struct {
	tool   Tool
	schema *compiledSchema
	group  string
}

// NewRegistry returns a registry of the given tools. A nil tool, an invalid
// or duplicate name, or a parameters schema that is not a valid JSON
// schema of an object is an error.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{entries: make(map[string]entry, len(tools))}
	if err := r.add("", tools); err != nil {
		return nil, err
	}
	return r, nil
}

// SetGroup replaces the tools of group (for example "mcp:github") with
// tools, atomically: on an error nothing changes. The group must not be
// empty, and its tools' names must not collide with other groups' or the
// fixed tools'.
func (r *Registry) SetGroup(group string, tools []Tool) error {
	if group == "" {
		return errors.New("tool group name is empty")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := make(map[string]entry, len(r.entries))
	for name, e := range r.entries {
		if e.group != group {
			kept[name] = e
		}
	}
	old := r.entries
	r.entries = kept
	if err := r.add(group, tools); err != nil {
		r.entries = old
		r.names = slices.Sorted(maps.Keys(old))
		return err
	}
	return nil
}

// add registers tools under group; r.mu is held or r is not yet shared.
func (r *Registry) add(group string, tools []Tool) error {
	added := make(map[string]entry, len(tools))
	for i, t := range tools {
		if t == nil {
			return fmt.Errorf("tool %d is nil", i)
		}
		name := t.Name()
		if !ValidName(name) {
			return fmt.Errorf("tool name %q is invalid: it must match ^[a-zA-Z0-9_-]{1,64}$", name)
		}
		if _, dup := added[name]; dup {
			return fmt.Errorf("tool %q is registered twice", name)
		}
		if e, dup := r.entries[name]; dup {
			if e.group == "" {
				return fmt.Errorf("tool %q is registered twice", name)
			}
			return fmt.Errorf("tool %q is registered twice (already by %s)", name, e.group)
		}
		schema, err := compileSchema(t.Parameters())
		if err != nil {
			return fmt.Errorf("tool %q: %w", name, err)
		}
		added[name] = entry{tool: t, schema: schema, group: group}
	}
	for name, e := range added {
		r.entries[name] = e
	}
	r.names = slices.Sorted(maps.Keys(r.entries))
	return nil
}

// ValidName reports whether name is a valid tool (OpenAI function) name:
// 1 to 64 ASCII letters, digits, underscores or hyphens.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// Get returns the tool registered under name.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	return e.tool, ok
}

// Has reports whether a tool is registered under name.
func (r *Registry) Has(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.entries[name]
	return ok
}

// Names returns the registered tool names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.names)
}

// Definitions returns the definitions of the named tools in the order
// given. An unknown name is an error wrapping ErrUnknownTool; a name given
// twice is an error too, since the model must not see a function twice.
func (r *Registry) Definitions(names []string) ([]Definition, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	defs := make([]Definition, 0, len(names))
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		e, ok := r.entries[name]
		if !ok {
			return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
		}
		if seen[name] {
			return nil, fmt.Errorf("tool %q is listed twice", name)
		}
		seen[name] = true
		defs = append(defs, Definition{
			Name:        name,
			Description: e.tool.Description(),
			Parameters:  slices.Clone(e.tool.Parameters()),
		})
	}
	return defs, nil
}

// Validate checks args against the parameters schema of the named tool.
// It returns an error wrapping ErrUnknownTool or ErrInvalidArguments.
func (r *Registry) Validate(name string, args json.RawMessage) error {
	r.mu.RLock()
	e, ok := r.entries[name]
	r.mu.RUnlock()
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	return e.schema.validate(args)
}
