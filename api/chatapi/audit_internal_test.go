package chatapi

import "testing"

// TestHeaderOn reads the switch header.
func TestHeaderOn(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "false": false, "Off": false, " no ": false, "1": true, "true": true, "yes": true} {
		if got := headerOn(v); got != want {
			t.Errorf("headerOn(%q) = %v, want %v", v, got, want)
		}
	}
}
