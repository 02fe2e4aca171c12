// Package plots draws the figures of shm runs from their Stan CSV files
// (shm's or CmdStan's): trace plots, rank plots (Vehtari et al. 2021),
// density overlays of several runs, pairs plots with the divergent draws
// marked, and the energy plot with the E-BFMI. A kind function builds a
// Figure, a grid of panels holding labelled series; Render draws it with
// gonum.org/v1/plot as SVG or PNG. Tests inspect the Figure (panels,
// labels, one series per chain) as well as the rendered output.
package plots

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure is a grid of panels, filled row by row.
type Figure struct {
	Title  string
	Cols   int
	Panels []*Panel
}

// Panel is one plot of a figure.
type Panel struct {
	Title, XLabel, YLabel string
	Series                []Series
}

// SeriesKind is how a series is drawn.
type SeriesKind int

const (
	// Line joins the points.
	Line SeriesKind = iota
	// Points draws each point.
	Points
	// Marks draws each point with the highlighting glyph (divergent
	// draws).
	Marks
	// Band fills the area between Y and Y2.
	Band
	// Image draws Z, a Rows × Cols grid in row-major order with row 1 at
	// the top, in gray levels from Lo (black) to Hi (white).
	Image
)

// Series is one set of points of a panel.
type Series struct {
	Label string
	Kind  SeriesKind
	X, Y  []float64
	Y2    []float64 // the upper edge of a Band
	// An Image's values, its size and its gray scale.
	Z          []float64
	Rows, Cols int
	Lo, Hi     float64
	// Color is an index into the palette (a chain, a run); Marks series
	// use the highlight color.
	Color int
}

// palette is the Okabe–Ito palette, safe for the common color
// deficiencies; the highlight color (vermillion) is kept for marks.
var palette = []color.RGBA{
	{0, 114, 178, 255},   // blue
	{230, 159, 0, 255},   // orange
	{0, 158, 115, 255},   // bluish green
	{204, 121, 167, 255}, // reddish purple
	{86, 180, 233, 255},  // sky blue
	{240, 228, 66, 255},  // yellow
	{0, 0, 0, 255},       // black
}

var highlight = color.RGBA{213, 94, 0, 255}

// PNGDPI is the resolution of the PNG images Render draws: pixels per
// inch.
const PNGDPI = 96

// Render draws f to w as "svg" or "png", width × height.
func Render(f *Figure, w io.Writer, format string, width, height vg.Length) error {
	if len(f.Panels) == 0 {
		return fmt.Errorf("plots: the figure has no panels")
	}
	cols := max(f.Cols, 1)
	rows := (len(f.Panels) + cols - 1) / cols
	// One legend per figure, in the first panel with labelled series:
	// the panels share their series' labels and colors.
	legend := -1
	for k, pn := range f.Panels {
		for _, s := range pn.Series {
			if s.Label != "" && legend < 0 {
				legend = k
			}
		}
	}
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
		for c := range grid[r] {
			k := r*cols + c
			if k >= len(f.Panels) {
				continue
			}
			p, err := f.Panels[k].plot(k == legend)
			if err != nil {
				return err
			}
			grid[r][c] = p
		}
	}
	var canvas vg.CanvasWriterTo
	switch strings.ToLower(format) {
	case "svg":
		canvas = vgsvg.New(width, height)
	case "png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(PNGDPI))}
	default:
		return fmt.Errorf("plots: unknown format %q (svg or png)", format)
	}
	dc := draw.New(canvas)
	// A white background, then the title.
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	if f.Title != "" {
		font := plot.DefaultFont
		font.Size = vg.Points(13)
		sty := draw.TextStyle{Color: color.Black, Font: font, XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.DefaultTextHandler}
		dc.FillText(sty, vg.Point{X: dc.Min.X + dc.Size().X/2, Y: dc.Max.Y - vg.Points(4)}, f.Title)
		dc.Max.Y -= vg.Points(22)
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(8), PadY: vg.Points(8), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(4)}
	canvases := plot.Align(grid, tiles, dc)
	for r := range grid {
		for c, p := range grid[r] {
			if p != nil {
				p.Draw(canvases[r][c])
			}
		}
	}
	_, err := canvas.WriteTo(w)
	return err
}

// grid is an Image series as gonum's GridXYZ: column c, row r from the
// bottom.
type grid struct{ s Series }

func (g grid) Dims() (c, r int)   { return g.s.Cols, g.s.Rows }
func (g grid) Z(c, r int) float64 { return g.s.Z[(g.s.Rows-1-r)*g.s.Cols+c] }
func (g grid) X(c int) float64    { return float64(c) }
func (g grid) Y(r int) float64    { return float64(r) }

// grays is a palette of 256 gray levels, black to white.
type grays struct{}

func (grays) Colors() []color.Color {
	out := make([]color.Color, 256)
	for i := range out {
		out[i] = color.Gray{Y: uint8(i)}
	}
	return out
}

// plot builds the gonum plot of a panel, with its legend when legend is
// set.
func (pn *Panel) plot(legend bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = pn.Title
	p.X.Label.Text = pn.XLabel
	p.Y.Label.Text = pn.YLabel
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.TextStyle.Font.Size = vg.Points(10)
	p.Y.Label.TextStyle.Font.Size = vg.Points(10)
	for _, s := range pn.Series {
		if s.Kind == Image {
			hm := plotter.NewHeatMap(grid{s}, grays{})
			hm.Min, hm.Max = s.Lo, s.Hi
			if !(hm.Max > hm.Min) {
				hm.Max = hm.Min + 1
			}
			p.Add(hm)
			if len(pn.Series) == 1 {
				p.HideAxes() // a picture alone
			}
			continue
		}
		xys := make(plotter.XYs, 0, len(s.X))
		for i := range s.X {
			if isFinite(s.X[i]) && isFinite(s.Y[i]) {
				xys = append(xys, plotter.XY{X: s.X[i], Y: s.Y[i]})
			}
		}
		if len(xys) == 0 {
			continue
		}
		col := palette[s.Color%len(palette)]
		var thumb plot.Thumbnailer
		switch s.Kind {
		case Band:
			var poly plotter.XYs
			finite := func(i int) bool { return isFinite(s.X[i]) && isFinite(s.Y[i]) && isFinite(s.Y2[i]) }
			for i := range s.X {
				if finite(i) {
					poly = append(poly, plotter.XY{X: s.X[i], Y: s.Y2[i]})
				}
			}
			for i := len(s.X) - 1; i >= 0; i-- {
				if finite(i) {
					poly = append(poly, plotter.XY{X: s.X[i], Y: s.Y[i]})
				}
			}
			pg, err := plotter.NewPolygon(poly)
			if err != nil {
				return nil, err
			}
			pg.Color, pg.LineStyle.Width = color.NRGBA{R: col.R, G: col.G, B: col.B, A: 70}, 0
			p.Add(pg)
			thumb = pg
		case Line:
			l, err := plotter.NewLine(xys)
			if err != nil {
				return nil, err
			}
			l.Color, l.Width = col, vg.Points(0.8)
			p.Add(l)
			thumb = l
		case Points, Marks:
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return nil, err
			}
			sc.GlyphStyle.Color, sc.GlyphStyle.Radius, sc.GlyphStyle.Shape = col, vg.Points(1.2), draw.CircleGlyph{}
			if s.Kind == Marks {
				sc.GlyphStyle.Color, sc.GlyphStyle.Radius, sc.GlyphStyle.Shape = highlight, vg.Points(2.5), draw.CrossGlyph{}
			}
			p.Add(sc)
			thumb = sc
		}
		if s.Label != "" && legend {
			p.Legend.Add(s.Label, thumb)
		}
	}
	if legend {
		p.Legend.Top = true
		p.Legend.TextStyle.Font.Size = vg.Points(8)
	}
	for _, ax := range []struct {
		name string
		a    *plot.Axis
	}{{"x", &p.X}, {"y", &p.Y}} {
		lo, hi := ax.a.Min, ax.a.Max
		if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
			continue // no data: gonum draws the axis as it is
		}
		// gonum widens an empty range by ±1, which changes nothing beyond
		// 2^53 and leaves a range its ticks refuse: widen it relatively.
		if lo == hi {
			pad := max(1, math.Abs(lo)*1e-9)
			ax.a.Min, ax.a.Max = lo-pad, hi+pad
		}
		// gonum's tick labelling never ends on an axis whose span
		// overflows.
		if math.IsInf(ax.a.Max-ax.a.Min, 0) {
			return nil, fmt.Errorf("plots: panel %q: its %s values, from %g to %g, span more than the largest double: too wide to draw",
				pn.Title, ax.name, lo, hi)
		}
	}
	return p, nil
}

// isFinite reports whether x is neither NaN nor infinite.
func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
