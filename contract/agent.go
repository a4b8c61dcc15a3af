package contract

// AgentSpec is what a workflow needs to know of an agent: everything but the
// prompt text, which the model activity adds itself so it is not repeated in
// every activity input.
type AgentSpec struct {
	ID         string `json:"id"`
	Mode       string `json:"mode"`
	Model      string `json:"model"`
	MaxTurns   int    `json:"max_turns"`
	MaxReplans int    `json:"max_replans"`
	// Parallel bounds the plan steps that run at once (the agent's
	// parallel:, else the worker's LONGHAUL_PLAN_PARALLEL); 0 in a spec
	// resolved before it existed, which the workflow reads as 1.
	Parallel int `json:"parallel,omitempty"`
	// Context is the agent's own context window (context:), 0 for the
	// model's.
	Context int      `json:"context,omitempty"`
	Tools   []string `json:"tools,omitempty"`
	// Skills are the agent's skills, in file order: what a plan's skill
	// steps and slash commands may run.
	Skills []SkillSpec `json:"skills,omitempty"`
	// ReviewPlan asks for a model review of each plan on top of the
	// deterministic checks.
	ReviewPlan bool `json:"review_plan,omitempty"`
	// Approval lists the agent's tools whose every call a person must
	// approve first (approval: required in a skill file).
	Approval []string `json:"approval,omitempty"`
	// Temperature is the agent's own, used when a request sets none.
	Temperature *float32 `json:"temperature,omitempty"`
	// Memory is the agent's memory mode ("tools", "recall"), empty when
	// it has none or this worker has no memory (LONGHAUL_EMBED_MODEL
	// unset); Remember asks for the facts of each turn to be saved.
	Memory   string `json:"memory,omitempty"`
	Remember bool   `json:"remember,omitempty"`
	// Access says which allow: filter applied, for the Temporal UI (the
	// ResolveAgent marker's result): the user's role and groups and what
	// they hid, e.g. "role=user groups=[media]: hidden skill seerr; tools
	// files__write_file". Tools and Skills above are already filtered.
	Access string `json:"access,omitempty"`
	// Models are the models the agent names per role (models:), each
	// empty when it names none; the workflow falls back to Model.
	Models RoleModels `json:"models,omitzero"`
	// Language is "auto" when the agent answers in the user's language,
	// working in ReasonIn.
	Language string `json:"language,omitempty"`
	ReasonIn string `json:"reason_in,omitempty"`
	// VectorStores are the agent's own vector stores (vector_stores:),
	// searched beside the request's.
	VectorStores []string `json:"vector_stores,omitempty"`
	// Asks are the agent's ask_ tools (agents:) that the user may use;
	// their names are in Tools too. AskOutput is the most characters of
	// an asked agent's answer the model reads (the worker's tool output
	// limit), 0 for no limit.
	Asks      []AskSpec `json:"asks,omitempty"`
	AskOutput int       `json:"ask_output,omitempty"`
}

// RoleModels are an agent's models per role (skills.RoleModels), as the
// workflow reads them: an empty one is the agent's model.
type RoleModels struct {
	Plan      string `json:"plan,omitempty"`
	Review    string `json:"review,omitempty"`
	Classify  string `json:"classify,omitempty"`
	Answer    string `json:"answer,omitempty"`
	Translate string `json:"translate,omitempty"`
	Compact   string `json:"compact,omitempty"`
}

// SkillSpec is what a workflow needs to know of a skill.
type SkillSpec struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	// Command is the slash command that runs the skill directly, or empty.
	Command string `json:"command,omitempty"`
	// Tools are the tools the skill's own loop may call: its scope.
	Tools []string `json:"tools,omitempty"`
	// Model is the skill's own model, or empty for the agent's.
	Model string `json:"model,omitempty"`
	// MaxTurns bounds the skill's loop.
	MaxTurns int `json:"max_turns"`
}
