package contract

// Run modes, as in RunState.Mode.
const (
	ModeChat    = "chat"
	ModeAgentic = "agentic"
	ModeSkill   = "skill"
	ModeTask    = "task"
	// ModeAuto is an agent's mode (not a run's) that has a small
	// classification call choose between ModeChat and ModeAgentic.
	ModeAuto = "auto"
)
