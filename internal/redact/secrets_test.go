package redact_test

import (
	"testing"

	"github.com/longhaul-dev/longhaul/internal/redact"
)

func TestSecrets(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]string
		in     string
		want   string
		cut    bool // the text was cut short: HideCut
	}{
		{name: "plain", values: map[string]string{"KEY": "s3cr3t-value"},
			in: "key is s3cr3t-value, again s3cr3t-value", want: "key is ${KEY}, again ${KEY}"},
		{name: "url escaped", values: map[string]string{"TOKEN": "s3cr3t/+x"},
			in: "a s3cr3t%2F%2Bx b s3cr3t%2F+x", want: "a ${TOKEN} b ${TOKEN}"},
		{name: "json escaped", values: map[string]string{"KEY": `a"b<c>`},
			in: `{"k":"a\"b<c>","h":"a\"b\u003cc\u003e"}`, want: `{"k":"${KEY}","h":"${KEY}"}`},
		{name: "four bytes is a secret", values: map[string]string{"PIN": "4321"},
			in: "pin 4321", want: "pin ${PIN}"},
		{name: "shorter values stay", values: map[string]string{"SHORT": "abc", "EMPTY": ""},
			in: "abc stays", want: "abc stays"},
		{name: "a secret inside a longer one is the longer one", values: map[string]string{"LONG": "tok-ABCDEF-123", "INNER": "ABCDEF"},
			in: "x tok-ABCDEF-123 y ABCDEF", want: "x ${LONG} y ${INNER}"},
		{name: "overlapping secrets are both hidden whole", values: map[string]string{"A": "xxAAAA", "B": "AAAAyy"},
			in: "<xxAAAAyy>", want: "<${A}${B}>"},
		{name: "the start of a secret at a cut", values: map[string]string{"KEY": "SECRETVALUE-0123"},
			in: "key: SECRETV", want: "key: ${KEY}", cut: true},
		{name: "three bytes at a cut are hidden", values: map[string]string{"KEY": "SECRETVALUE-0123"},
			in: "key: SEC", want: "key: ${KEY}", cut: true},
		{name: "two bytes at a cut stay", values: map[string]string{"KEY": "SECRETVALUE-0123"},
			in: "key: SE", want: "key: SE", cut: true},
		{name: "a whole secret before a cut", values: map[string]string{"KEY": "SECRETVALUE-0123"},
			in: "SECRETVALUE-0123 and SECRETVAL", want: "${KEY} and ${KEY}", cut: true},
		{name: "an uncut text keeps a prefix", values: map[string]string{"KEY": "SECRETVALUE-0123"},
			in: "key: SECRETV", want: "key: SECRETV"},
		{name: "none", values: nil, in: "nothing to hide", want: "nothing to hide", cut: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := redact.NewSecrets(tt.values)
			got := s.Hide(tt.in)
			if tt.cut {
				got = s.HideCut(tt.in)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNilSecretsHideNothing(t *testing.T) {
	var s *redact.Secrets
	if got := s.HideCut("text SECR"); got != "text SECR" {
		t.Errorf("got %q", got)
	}
}
