package config

import (
	"slices"
	"strings"
)

// multitaskStrategies are the strategies LONGHAUL_CHAT_MULTITASK may name
// (contract.MultitaskStrategies, which this leaf package does not import).
var multitaskStrategies = []string{"reject", "enqueue", "interrupt", "steer", "rollback"}

// checkMultitask checks the chats' multitask strategy.
func (c Config) checkMultitask(p *problems) {
	if c.ChatMultitask != "" && !slices.Contains(multitaskStrategies, c.ChatMultitask) {
		p.bad("CHAT_MULTITASK", "%q is not one of %s", c.ChatMultitask, strings.Join(multitaskStrategies, ", "))
	}
}
