package main

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLiveView(t *testing.T) {
	frames := []struct{ frame, summary string }{
		{"a\nb\n", "one"},
		{"a\nb\n", "one"},
		{"a\nc\nd\n", "two"},
		{"a\nc\nd\n", "two"},
	}
	tests := []struct {
		name string
		tty  bool
		want string
	}{
		// Off a terminal: the first frame, then one line per change of the summary.
		{name: "plain", want: "a\nb\ntwo\nend\n"},
		// On a terminal: each changed frame replaces the previous one in place.
		{name: "terminal", tty: true, want: "a\nb\n\x1b[2A\x1b[Ja\nc\nd\nend\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			v := &liveView{out: &out, tty: tt.tty}
			for _, f := range frames {
				v.Show(f.frame, f.summary)
			}
			v.Finish("end")
			if diff := cmp.Diff(tt.want, out.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIsTerminalOfBuffer(t *testing.T) {
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is not a terminal")
	}
}
