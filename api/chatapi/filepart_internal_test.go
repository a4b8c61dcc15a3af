package chatapi

import (
	"strings"
	"testing"
)

func TestDecodeFileData(t *testing.T) {
	for _, c := range []struct {
		in, data, typ, err string
	}{
		{in: "data:application/pdf;base64,JVBERg==", data: "%PDF", typ: "application/pdf"},
		{in: "JVBERg==", data: "%PDF"},
		{in: "data:application/pdf,JVBERg==", err: "data URL"},
		{in: "data:application/pdf;base64,!!", err: "base64"},
		{in: "", err: "empty"},
	} {
		data, typ, err := decodeFileData(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || string(data) != c.data || typ != c.typ {
			t.Errorf("%q: %q %q %v", c.in, data, typ, err)
		}
	}
}
