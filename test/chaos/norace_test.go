//go:build unix && !race

package chaos

// raceEnabled reports whether the test was built with -race; the binary it
// builds then is too.
const raceEnabled = false
