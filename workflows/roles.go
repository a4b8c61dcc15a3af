package workflows

import (
	"fmt"
	"strings"

	"github.com/longhaul-dev/longhaul"
	"github.com/longhaul-dev/longhaul/contract"
	"github.com/longhaul-dev/longhaul/internal/textcut"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// The roles an agent may give a model of its own (models: in its file).
const (
	rolePlan      = "plan"
	roleReview    = "review"
	roleClassify  = "classify"
	roleAnswer    = "answer"
	roleTranslate = "translate"
	roleCompact   = "compact"
)

// roleModel is the model of a role: the agent's models: entry, else (for
// translate) its answer model, else the run's model. Runs of agents without
// models: (every run recorded before it existed among them) use the run's
// model throughout, as they always did.
func (r *run) roleModel(role string) string {
	m := r.spec.Models
	var ref string
	switch role {
	case rolePlan:
		ref = m.Plan
	case roleReview:
		ref = m.Review
	case roleClassify:
		ref = m.Classify
	case roleAnswer:
		ref = m.Answer
	case roleTranslate:
		ref = m.Translate
		if ref == "" {
			ref = m.Answer
		}
	case roleCompact:
		ref = m.Compact
	}
	if ref == "" {
		return r.model
	}
	return ref
}

// caller is who makes a structured call of this run with model: the
// agent, for the run's user.
func (r *run) caller(model string) contract.Caller {
	return contract.Caller{Agent: r.spec.ID, Principal: r.principal(), Model: model}
}

// roleSummary is an activity summary naming the role's model when the
// agent gives the roles models of their own, so the Temporal UI shows
// which model did what.
func (r *run) roleSummary(what, model string) string {
	if r.spec.Models == (contract.RoleModels{}) {
		return what
	}
	return what + " llm " + model
}

// translationExcerpt bounds each text of a translation shown in the plan
// and the Temporal UI.
const translationExcerpt = 300

// translateRequest, for an agent with language: auto, detects the language
// of the user's last message and, when it is not the one the agent works
// in, puts the message translated in its place: dispatch, planning, steps
// and reviews work on the translation; the answer is written in the user's
// language (answerInLanguage). Earlier turns are left as they were. A
// translation that fails leaves the request as it is and says so: the run
// goes on, in the user's language.
func (r *run) translateRequest(ctx workflow.Context) error {
	if r.spec.Language != "auto" || r.in.Translation != nil {
		return nil
	}
	last := lastUserIndex(r.in.Messages)
	if last < 0 || strings.TrimSpace(r.in.Messages[last].Content) == "" {
		return nil
	}
	original := r.in.Messages[last].Content
	into := r.spec.ReasonIn
	model := r.roleModel(roleTranslate)
	var resp contract.TranslateResponse
	err := workflow.ExecuteActivity(r.structuredOptions(ctx, "detect language, translate into "+into+" llm "+model), a.Translate, contract.TranslateRequest{
		Caller: r.caller(model), Text: original, Into: into,
	}).Get(ctx, &resp)
	r.addUsage("translate-request", model, resp.Usage)
	switch {
	case temporal.IsCanceledError(err):
		return err
	case err != nil:
		r.think(ctx, "Could not detect the request's language ("+errorMessage(err)+"); working on it as written")
		return nil
	case resp.Language == into || resp.Text == "":
		return nil
	}
	t := &longhaul.Translation{Language: resp.Language, LanguageName: resp.LanguageName, Into: into, Original: original, Text: resp.Text}
	r.in.Translation = t
	msgs := append([]longhaul.Message(nil), r.in.Messages...)
	msgs[last].Content = t.Text
	r.in.Messages = msgs
	r.think(ctx, fmt.Sprintf("The request is in %s; working on it in %s: %s", languageLabel(t), into, textcut.Runes(t.Text, translationExcerpt)))
	workflow.SetCurrentDetails(ctx, translationMarkdown(t))
	return nil
}

// answerInLanguage tells the answering call to write in the user's
// language.
func answerInLanguage(t *longhaul.Translation) string {
	return fmt.Sprintf("# Language\n\nThe user wrote in %s; their latest message was translated into %s for you to work on. Work in %s; write your final answer to the user in %s (%s), not in %s.",
		languageLabel(t), t.Into, t.Into, languageName(t), t.Language, t.Into)
}

// translationMarkdown shows both texts of a translated request, for the
// plan and the Temporal UI.
func translationMarkdown(t *longhaul.Translation) string {
	return fmt.Sprintf("_Request in %s:_ %s\n\n_Worked on in %s:_ %s",
		languageLabel(t), oneLineExcerpt(t.Original), t.Into, oneLineExcerpt(t.Text))
}

func languageName(t *longhaul.Translation) string {
	if t.LanguageName != "" {
		return t.LanguageName
	}
	return t.Language
}

func languageLabel(t *longhaul.Translation) string {
	if t.LanguageName != "" {
		return t.LanguageName + " (" + t.Language + ")"
	}
	return t.Language
}

func oneLineExcerpt(s string) string {
	return textcut.Runes(strings.Join(strings.Fields(s), " "), translationExcerpt)
}
