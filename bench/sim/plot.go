package sim

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// WritePlot writes a PNG of scenario sc's runs to path: four panels over
// simulated time, one line per contender: the concurrency limit (in a
// fleet, the sum of the gates' limits), the downstream's in-flight count
// (with its worker count dashed), the p99 latency of successes and the
// goodput (with the offered load dashed), the last two per one-second
// arrival bin. A limit or worker count of an unlimited downstream (10,000)
// is left out, as it would flatten the other lines.
func WritePlot(path string, sc Scenario, rs []*Result) error {
	limitTitle := "concurrency limit"
	if g := sc.gates(); g > 1 {
		limitTitle = fmt.Sprintf("concurrency limit (sum over the %d gates)", g)
	}
	scaled := func(n int) float64 {
		if n >= unlimited {
			return math.NaN()
		}
		return float64(n)
	}
	if sc.Phases[0].Workers >= unlimited {
		limitTitle += fmt.Sprintf(" (the oracle's, %d, not drawn)", unlimited)
	}
	panels := []struct {
		title, y string
		series   func(*Result) plotter.XYs
		ref      func(*Result) plotter.XYs // dashed reference line, from the first result
		refName  string
	}{
		{limitTitle, "calls", func(r *Result) plotter.XYs {
			return samples(r, func(s Sample) float64 { return scaled(s.Limit) })
		}, nil, ""},
		{"downstream in-flight", "calls", func(r *Result) plotter.XYs {
			return samples(r, func(s Sample) float64 { return float64(s.InFlight) })
		}, func(r *Result) plotter.XYs {
			return samples(r, func(s Sample) float64 { return scaled(s.Capacity) })
		}, "workers"},
		{"p99 latency of successes (by arrival second)", "ms", func(r *Result) plotter.XYs {
			return bins(r, func(b Bin) float64 {
				if b.P99 == 0 {
					return math.NaN() // no success in that second
				}
				return float64(b.P99) / float64(time.Millisecond)
			})
		}, nil, ""},
		{fmt.Sprintf("goodput: successes within %v (by arrival second)", sc.slo()), "calls/s", func(r *Result) plotter.XYs {
			return bins(r, func(b Bin) float64 { return float64(b.Good) })
		}, func(r *Result) plotter.XYs {
			return bins(r, func(b Bin) float64 { return float64(b.Offered) })
		}, "offered"},
	}
	rows := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: %s", sc.Name, pn.title)
		p.X.Label.Text = "simulated time (s)"
		p.Y.Label.Text = pn.y
		p.Legend.Top = true
		p.Add(plotter.NewGrid())
		if pn.ref != nil {
			for k, seg := range segments(pn.ref(rs[0])) {
				l, err := plotter.NewLine(seg)
				if err != nil {
					return err
				}
				l.Color = color.Gray{Y: 120}
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				p.Add(l)
				if k == 0 {
					p.Legend.Add(pn.refName, l)
				}
			}
		}
		for j, r := range rs {
			for k, seg := range segments(pn.series(r)) {
				l, err := plotter.NewLine(seg)
				if err != nil {
					return err
				}
				l.Color = palette[j%len(palette)]
				l.Width = vg.Points(1)
				p.Add(l)
				if k == 0 {
					p.Legend.Add(r.Contender, l)
				}
			}
		}
		rows[i] = []*plot.Plot{p}
	}
	img := vgimg.New(12*vg.Inch, 16*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(rows), Cols: 1, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2, PadY: vg.Millimeter * 4}
	cs := plot.Align(rows, tiles, dc)
	for i := range rows {
		rows[i][0].Draw(cs[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// palette colours the contenders, in the order of Contenders: floodgate's
// three in blues and greens, failsafe-go orange, the pool purple, the oracle
// black.
var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x4e, B: 0xd8, A: 0xff},
	color.RGBA{R: 0x6b, G: 0xae, B: 0xd6, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.Black,
}

// segments splits xy at NaN values (no data), so that a gap is drawn as
// a gap; it returns none when every value is NaN.
func segments(xy plotter.XYs) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for _, p := range xy {
		if math.IsNaN(p.Y) {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, p)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func samples(r *Result, y func(Sample) float64) plotter.XYs {
	xy := make(plotter.XYs, len(r.Samples))
	for i, s := range r.Samples {
		xy[i] = plotter.XY{X: s.T.Seconds(), Y: y(s)}
	}
	return xy
}

func bins(r *Result, y func(Bin) float64) plotter.XYs {
	xy := make(plotter.XYs, len(r.Bins))
	for i, b := range r.Bins {
		xy[i] = plotter.XY{X: b.T.Seconds() + 0.5, Y: y(b)}
	}
	return xy
}
