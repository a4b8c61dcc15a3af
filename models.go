package longhaul

import "strings"

// ModelListSep separates the models of a fallback list written as one
// reference: "remote:big-model,llama3.1:8b". No model reference has a
// comma, so a list travels wherever one reference does (an agent's spec,
// a model request, LONGHAUL_LLM_MODEL) and a single model is a list of one.
const ModelListSep = ","

// ModelList splits a model reference into the models of its fallback list,
// in order: the first answers, each next one when the one before failed.
// Spaces around each are dropped, empty entries skipped; an empty ref is
// an empty list.
func ModelList(ref string) []string {
	var out []string
	for m := range strings.SplitSeq(ref, ModelListSep) {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// PrimaryModel is the first model of ref's fallback list: ref itself when
// it names one model.
func PrimaryModel(ref string) string {
	if !strings.Contains(ref, ModelListSep) {
		return ref
	}
	if l := ModelList(ref); len(l) > 0 {
		return l[0]
	}
	return ""
}
