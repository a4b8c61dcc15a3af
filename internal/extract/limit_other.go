//go:build !linux

package extract

import "runtime/debug"

// limitSelf sets what it can of the child's limits off Linux: the garbage
// collector's soft limit only (no hard limit of the address space, no CPU
// limit; the parent's time limit still holds). Longhaul's deployments run
// on Linux.
func limitSelf(memory int64, _ int) error {
	debug.SetMemoryLimit(memory / 2)
	return nil
}
