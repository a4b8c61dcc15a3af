// Package longhaul holds the small domain types every other package speaks:
// chat messages and tool calls, usage, and the events a run publishes. It has
// no dependencies, so the workflow, the activities and the HTTP layer can share
// them without importing each other.
package longhaul
