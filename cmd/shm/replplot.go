package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/shmlang/shm/plots"
)

// imageProtocol is how a terminal shows an inline image.
type imageProtocol int

const (
	noImages imageProtocol = iota
	kittyImages
	itermImages
)

// detectImages tells from the environment (getenv) whether the terminal
// shows inline images, and how: kitty's graphics protocol (KITTY_WINDOW_ID
// or TERM=xterm-kitty) or iTerm2's (TERM_PROGRAM=iTerm.app or WezTerm,
// which reads it too). It is never assumed: any other terminal gets the
// file's path only.
func detectImages(getenv func(string) string) imageProtocol {
	switch {
	case getenv("KITTY_WINDOW_ID") != "" || getenv("TERM") == "xterm-kitty":
		return kittyImages
	case getenv("TERM_PROGRAM") == "iTerm.app" || getenv("TERM_PROGRAM") == "WezTerm":
		return itermImages
	}
	return noImages
}

// writeInlineImage writes the PNG image img to w as the terminal's escape
// sequence: kitty's in base64 chunks of at most 4096 bytes (m=1 on all but
// the last), iTerm2's in one OSC 1337 sequence.
func writeInlineImage(w io.Writer, p imageProtocol, img []byte) error {
	enc := base64.StdEncoding.EncodeToString(img)
	var b strings.Builder
	switch p {
	case kittyImages:
		for first := true; ; first = false {
			chunk := enc[:min(4096, len(enc))]
			enc = enc[len(chunk):]
			more := 0
			if enc != "" {
				more = 1
			}
			if first {
				fmt.Fprintf(&b, "\x1b_Gf=100,a=T,m=%d;%s\x1b\\", more, chunk)
			} else {
				fmt.Fprintf(&b, "\x1b_Gm=%d;%s\x1b\\", more, chunk)
			}
			if enc == "" {
				break
			}
		}
	case itermImages:
		fmt.Fprintf(&b, "\x1b]1337;File=inline=1;size=%d:%s\a", len(img), enc)
	default:
		return nil
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// cmdPlot implements ":plot KIND [vars...]": a figure of the last run
// written as a PNG file in the temporary folder (its path printed), and
// shown inline when the terminal supports it.
func (r *repl) cmdPlot(ctx context.Context, rest string) error {
	args := splitFields(rest)
	kinds := []string{"trace", "rank", "dens", "pairs", "energy"}
	if len(args) == 0 || !slices.Contains(kinds, args[0]) {
		return fmt.Errorf("usage: :plot %s [variables...]", strings.Join(kinds, "|"))
	}
	run, err := r.lastRun()
	if err != nil {
		return err
	}
	plotRun := &plots.Run{Label: run.model, Fit: run.fit}
	if err := hasDraws(plotRun, false); err != nil {
		return err
	}
	// The figure is built and rendered in memory (a pairs plot of many
	// draws takes most of a minute); Ctrl-C abandons it and writes nothing.
	img, err := interruptible(ctx, func() (*bytes.Buffer, error) {
		fig, err := runFigure(args[0], []*plots.Run{plotRun}, args[1:], false)
		if err != nil {
			return nil, err
		}
		w, h := figureSize(fig, 0, 0)
		var img bytes.Buffer
		return &img, plots.Render(fig, &img, "png", w, h)
	})
	if ctx.Err() != nil {
		return errors.New(":plot interrupted; nothing written")
	}
	if err != nil {
		return err
	}
	r.plots++
	// A new file of a name no one can foresee: a file or a link left at
	// a predictable name (another session's, or planted) is never
	// written through.
	f, err := os.CreateTemp(os.TempDir(), fmt.Sprintf("shm-%s-%s-*.png", run.model, args[0]))
	if err != nil {
		return errors.New("writing the figure: " + err.Error())
	}
	path := f.Name()
	_, err = f.Write(img.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return errors.New("writing the figure: " + err.Error())
	}
	fmt.Fprintln(r.stdout, path)
	if r.images != noImages {
		return writeInlineImage(r.stdout, r.images, img.Bytes())
	}
	return nil
}
