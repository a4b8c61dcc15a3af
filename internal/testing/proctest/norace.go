//go:build !race

package proctest

// RaceEnabled reports whether the test was built with -race; the longhaul
// binary Binary builds then is too.
const RaceEnabled = false
