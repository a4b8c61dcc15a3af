package runweb

import (
	"fmt"
	"slices"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/api/web"
	"github.com/longhaul-dev/longhaul/internal/endpoints"
	"github.com/longhaul-dev/longhaul/skills"
)

// Models says which model references a user may send (a fork's model):
// those the catalog gives the user already, through the agents their
// allow: admits (the agent's model and its roles' models) and the skills
// of those agents their allow: admits, and the engine's default model. A
// reference is compared by the endpoint and model it resolves to, never as
// typed: ":gpt-4o" is the default endpoint's gpt-4o. Any other is refused
// as unknown: no user reaches a model, or an endpoint, nobody granted.
type Models struct {
	Catalog *skills.Catalog
	// Endpoints resolves references (LONGHAUL_LLM_ENDPOINTS); nil compares
	// them as written.
	Endpoints *endpoints.Set
	// Default is the engine's default model (LONGHAUL_LLM_MODEL), which
	// every agent without a model of its own uses.
	Default string
}

// Check returns nil when user may use every model of ref (a fallback list
// is checked model by model), else OpenAI's 404 model_not_found naming
// the first refused, in the words of an unknown one.
func (m Models) Check(ref string, user longhaul.User) error {
	list := longhaul.ModelList(ref)
	if len(list) == 0 {
		return web.BadRequest("model: name a model, or leave the field out")
	}
	granted := m.granted(user)
	for _, one := range list {
		if !slices.Contains(granted, m.canonical(one)) {
			return web.ModelNotFound(fmt.Sprintf("model: %q does not exist or is not one you may use; fork with the models of the agents GET /v1/models lists", one))
		}
	}
	return nil
}

// granted are the canonical references of the models user may use.
func (m Models) granted(user longhaul.User) []string {
	var refs []string
	add := func(ref string) {
		for _, one := range longhaul.ModelList(ref) {
			refs = append(refs, m.canonical(one))
		}
	}
	add(m.Default)
	if m.Catalog == nil {
		return refs
	}
	for _, a := range m.Catalog.AgentsFor(user) {
		add(a.Model)
		for _, r := range a.Models.Refs() {
			add(r[1])
		}
		for _, id := range a.Skills {
			if s, ok := m.Catalog.Skill(id); ok && s.Allow.Allows(user) {
				add(s.Model)
			}
		}
	}
	return refs
}

// canonical is ref as the endpoint and model it resolves to (as written
// when it resolves to none, or without endpoints).
func (m Models) canonical(ref string) string {
	if m.Endpoints == nil {
		return ref
	}
	return m.Endpoints.Canonical(ref)
}
