package contract

import (
	"github.com/longhaul-dev/longhaul"
)

// TranslateRequest asks for the language of the user's message and the
// message in Into: the first step of an agent with language: auto.
type TranslateRequest struct {
	// Caller's Model is the agent's translate model (models.translate,
	// else models.answer, else its model).
	Caller
	// Text is the user's message; Into the language the agent works in
	// (reason_in, an ISO 639-1 code).
	Text string `json:"text"`
	Into string `json:"into"`
}

// TranslateResponse is the detected language and the translation.
type TranslateResponse struct {
	// Language is the message's language, a lowercase ISO 639-1 code, and
	// LanguageName its English name.
	Language     string `json:"language"`
	LanguageName string `json:"language_name"`
	// Text is the message in the language asked for (the message itself
	// when it is in that language already).
	Text  string         `json:"text"`
	Usage longhaul.Usage `json:"usage"`
}
