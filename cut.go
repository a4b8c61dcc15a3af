package longhaul

import "strings"

// Why an answer that finished "length" is short (DoneData.Cut): the model
// stopped at its output limit (max_tokens, max_completion_tokens,
// max_output_tokens; Ollama's num_predict), which counts its thinking too.
const (
	// CutMaxTokens: the answer was cut off at the limit.
	CutMaxTokens = "max_tokens"
	// CutThinking: the limit was all spent thinking; there is no answer.
	CutThinking = "thinking"
)

// CutOf says why a model call's answer is short: finish is its finish
// reason, text its answer and reasoning its thinking.
func CutOf(finish, text, reasoning string) string {
	switch {
	case finish != "length":
		return ""
	case strings.TrimSpace(text) == "" && strings.TrimSpace(reasoning) != "":
		return CutThinking
	}
	return CutMaxTokens
}

// CutNotice is what a user reads of a cut answer.
func CutNotice(cut string) string {
	switch cut {
	case CutThinking:
		return "No answer: the model spent its whole output limit (max_tokens) thinking. Raise max_tokens, or lower reasoning_effort, and ask again."
	case CutMaxTokens:
		return "The answer was cut off at the model's output limit (max_tokens)."
	}
	return ""
}
