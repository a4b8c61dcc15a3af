// Package evals turns recorded runs into evaluation cases and grades the
// replays of them: it reads a run's Temporal history into a case file (the
// user's messages, every tool call with its recorded result, the plan, the
// answer, the usage), reads an operator's graders file, grades a replay's
// answer and compares its tool calls, plan and answer with the recording,
// and writes the report. The replay itself is the Evaluation workflow's
// (workflows/eval.go); this package does no I/O but on the files and the
// history it is given.
package evals
