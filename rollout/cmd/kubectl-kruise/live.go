package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// liveView shows a changing status. On a terminal it redraws the whole frame in place; elsewhere (a CI
// log, a pipe) it prints the first frame once, then one summary line per change, so logs stay readable.
type liveView struct {
	out   io.Writer
	tty   bool
	lines int
	last  string
	shown bool
}

func newLiveView(out io.Writer) *liveView {
	return &liveView{out: out, tty: isTerminal(out)}
}

// isTerminal: out is a terminal (not a pipe or a file).
func isTerminal(out io.Writer) bool {
	f, ok := out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) //nolint:gosec // a file descriptor fits in int
}

// Show presents a frame and its one-line summary; nothing is printed when neither changed.
func (v *liveView) Show(frame, summary string) {
	switch {
	case v.tty && frame != v.last:
		v.redraw(frame)
		v.last = frame
	case !v.tty && !v.shown:
		fmt.Fprint(v.out, frame)
		v.last, v.shown = summary, true
	case !v.tty && summary != v.last:
		fmt.Fprintln(v.out, summary)
		v.last = summary
	}
}

// redraw moves the cursor up over the previous frame and clears to the end of the screen.
func (v *liveView) redraw(frame string) {
	if v.lines > 0 {
		fmt.Fprintf(v.out, "\x1b[%dA\x1b[J", v.lines)
	}
	fmt.Fprint(v.out, frame)
	v.lines = strings.Count(frame, "\n")
}

// Finish prints the closing line below the last frame.
func (v *liveView) Finish(line string) {
	fmt.Fprintln(v.out, line)
}
