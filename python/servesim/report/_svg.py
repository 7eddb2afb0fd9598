"""Charts as inline SVG text, drawn from the numbers given and nothing else: lines and steps
(CDFs, series over time), points with error bars (a sweep's frontier), bars (capacity per
option). Every chart is an <svg role="img"> with a <title> and a <desc> a screen reader reads,
axis titles that carry their unit, each series a <g class="series" data-series=NAME> a legend
button shows or hides, and each point a <title> the browser shows on hover. No JavaScript is
needed to read one."""
import html
import math

W, H = 720, 380  # the drawing's size in px (it scales with the page)
LEFT, RIGHT, TOP, BOTTOM = 78, 40, 16, 56
# Colours a reader with the common colour-vision deficiencies tells apart (Okabe and Ito).
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
           "#F0E442"]
FLAGGED = "#C00000"
DASHES = ["", "9 4", "3 3", "12 3 3 3"]  # one per series in turn: lines that coincide stay seen


def esc(text):
    return html.escape(str(text), quote=True)


def number(v, digits=4):
    """V with DIGITS significant digits (thousands grouped); '—' when undefined."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e15):
        return "{:,}".format(int(v))
    a = abs(v)
    if a >= 10 ** (digits - 1):
        return "{:,.0f}".format(v)
    return "{:.{p}g}".format(v, p=digits)


def finite(v):
    return v is not None and not isinstance(v, bool) and isinstance(v, (int, float)) and \
        math.isfinite(v)


def ticks(lo, hi, n=6):
    """About N round tick values covering [LO, HI], at least two apart (values that are equal,
    or differ in their last bits only, get a range around them)."""
    scale = max(abs(lo), abs(hi))
    if not hi - lo > scale * 1e-9:
        lo, hi = (lo - scale * 0.5, hi + scale * 0.5) if scale > 0 else (0.0, 1.0)
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    # Rounded to 12 significant digits (0.30000000000000004 as 0.3), never to a fixed place.
    return [float("%.12g" % (k * step)) for k in range(first, max(last, first + 1) + 1)]


class Axes:
    """A plot area mapping data to px; LOG draws the axis in powers of ten."""

    def __init__(self, xs, ys, xlog=False, ylog=False, y0=False, yrange=None):
        self.xlog, self.ylog = xlog, ylog
        xs = [self._t(x, xlog) for x in xs if finite(x) and (x > 0 or not xlog)]
        ys = [self._t(y, ylog) for y in ys if finite(y) and (y > 0 or not ylog)]
        if y0 and not ylog:
            ys.append(0.0)
        self.xt = self._range(xs, xlog)
        self.yt = ticks(*yrange) if yrange else self._range(ys, ylog)

    @staticmethod
    def _t(v, log):
        return math.log10(v) if log else float(v)

    @staticmethod
    def _range(vs, log):
        if not vs:
            return [0.0, 1.0]
        lo, hi = min(vs), max(vs)
        if log:
            return [float(t) for t in range(math.floor(lo), math.ceil(hi) + 1)] if hi > lo else \
                [math.floor(lo), math.floor(lo) + 1.0]
        pad = (hi - lo) * 0.04 if hi > lo else (abs(hi) or 1.0) * 0.5
        # No negative range for figures that cannot be negative.
        return ticks(max(lo - pad, 0.0) if lo >= 0 else lo - pad, hi + pad)

    def x(self, v):
        lo, hi = self.xt[0], self.xt[-1]
        return LEFT + (self._t(v, self.xlog) - lo) / (hi - lo) * (W - LEFT - RIGHT)

    def y(self, v):
        lo, hi = self.yt[0], self.yt[-1]
        return H - BOTTOM - (self._t(v, self.ylog) - lo) / (hi - lo) * (H - TOP - BOTTOM)

    def ok(self, x, y):
        return finite(x) and finite(y) and (x > 0 or not self.xlog) and (y > 0 or not self.ylog)

    def frame(self, xlabel, ylabel, yticks=True, xticks=True):
        """Grid, tick labels and axis titles."""
        out = []
        for t in self.xt if xticks else []:
            v = 10 ** t if self.xlog else t
            px = self.x(v)
            out.append('<line class="grid" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>' %
                       (px, TOP, px, H - BOTTOM))
            out.append('<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>' %
                       (px, H - BOTTOM + 16, esc(number(v, 3))))
        for t in self.yt if yticks else []:
            v = 10 ** t if self.ylog else t
            py = self.y(v)
            out.append('<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>' %
                       (LEFT, py, W - RIGHT, py))
            out.append('<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>' %
                       (LEFT - 6, py + 4, esc(number(v, 3))))
        out.append('<rect class="axes" x="%d" y="%d" width="%d" height="%d"/>' %
                   (LEFT, TOP, W - LEFT - RIGHT, H - TOP - BOTTOM))
        out.append('<text class="label" x="%d" y="%d" text-anchor="middle">%s</text>' %
                   ((LEFT + W - RIGHT) // 2, H - 14, esc(xlabel)))
        out.append('<text class="label" transform="translate(16 %d) rotate(-90)" '
                   'text-anchor="middle">%s</text>' % ((TOP + H - BOTTOM) // 2, esc(ylabel)))
        return out


def svg(title, desc, body, chart_id):
    return ('<svg id="%s" class="chart" viewBox="0 0 %d %d" role="img" aria-labelledby="%s-t '
            '%s-d" xmlns="http://www.w3.org/2000/svg"><title id="%s-t">%s</title>'
            '<desc id="%s-d">%s</desc>%s</svg>' %
            (esc(chart_id), W, H, esc(chart_id), esc(chart_id), esc(chart_id), esc(title),
             esc(chart_id), esc(desc), "".join(body)))


def legend(names, colors, chart_id, dashed=()):
    """Buttons that show or hide each series (a script hooks them; without it they are a key)."""
    items = []
    for name, c in zip(names, colors):
        style = "border-bottom:3px %s %s" % ("dashed" if name in dashed else "solid", c)
        items.append('<button type="button" class="key" aria-pressed="true" data-chart="%s" '
                     'data-series="%s"><span style="%s">%s</span></button>' %
                     (esc(chart_id), esc(name), style, esc(name)))
    return '<div class="legend" role="group" aria-label="series">%s</div>' % "".join(items)


def lines(chart_id, title, series, xlabel, ylabel, xlog=False, ylog=False, step=False,
          hlines=(), y0=False, desc="", yrange=None):
    """SERIES: [(name, xs, ys, point_titles or None)]; HLINES: [(y, name)] drawn dashed;
    YRANGE: the y axis's (low, high) when fixed (a share in percent). Returns (svg, legend)."""
    xs = [x for _, sx, _, _ in series for x in sx]
    ys = [y for _, _, sy, _ in series for y in sy] + [y for y, _ in hlines]
    ax = Axes(xs, ys, xlog, ylog, y0, yrange)
    body = ax.frame(xlabel, ylabel)
    names, colors = [], []
    for i, (name, sx, sy, tips) in enumerate(series):
        c = PALETTE[i % len(PALETTE)]
        pts = [(ax.x(x), ax.y(y)) for x, y in zip(sx, sy) if ax.ok(x, y)]
        if step and pts:
            stepped = [pts[0]]
            for p in pts[1:]:
                stepped += [(p[0], stepped[-1][1]), p]
            pts = stepped
        path = " ".join("%.1f,%.1f" % p for p in pts)
        dash = DASHES[i % len(DASHES)]
        marks = []
        if tips:
            for x, y, tip in zip(sx, sy, tips):
                if ax.ok(x, y):
                    marks.append('<circle class="mark" cx="%.1f" cy="%.1f" r="3" fill="%s">'
                                 '<title>%s</title></circle>' % (ax.x(x), ax.y(y), c, esc(tip)))
        body.append('<g class="series" data-series="%s"><polyline fill="none" stroke="%s" '
                    'stroke-width="2"%s points="%s"><title>%s</title></polyline>%s</g>' %
                    (esc(name), c, ' stroke-dasharray="%s"' % dash if dash else "", path,
                     esc(name), "".join(marks)))
        names.append(name)
        colors.append(c)
    for j, (y, name) in enumerate(hlines):
        if not finite(y) or (ylog and y <= 0):
            continue
        c = "#444444"
        body.append('<g class="series" data-series="%s"><line x1="%d" x2="%d" y1="%.1f" '
                    'y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="6 4"><title>%s: '
                    '%s</title></line></g>' % (esc(name), LEFT, W - RIGHT, ax.y(y), ax.y(y), c,
                                               esc(name), esc(number(y))))
        names.append(name)
        colors.append(c)
    return (svg(title, desc or _lines_desc(series, xlabel, ylabel), body, chart_id),
            legend(names, colors, chart_id, dashed=[n for _, n in hlines]))


def _lines_desc(series, xlabel, ylabel):
    return "%s against %s; series: %s." % (ylabel, xlabel, ", ".join(s[0] for s in series))


def points(chart_id, title, groups, xlabel, ylabel, xlog=False, ylog=False, desc=""):
    """GROUPS: [(name, [(x, y, xerr, yerr, tip, flagged)])]: a marker each, error bars where
    given, flagged ones hollow and red. Returns (svg, legend)."""
    xs = [v for _, pts in groups for p in pts for v in (p[0] - (p[2] or 0), p[0] + (p[2] or 0))]
    ys = [v for _, pts in groups for p in pts for v in (p[1] - (p[3] or 0), p[1] + (p[3] or 0))]
    ax = Axes(xs, ys, xlog, ylog)
    body = ax.frame(xlabel, ylabel)
    names, colors = [], []
    for i, (name, pts) in enumerate(groups):
        c = PALETTE[i % len(PALETTE)]
        marks = []
        for x, y, xe, ye, tip, flagged in pts:
            if not ax.ok(x, y):
                continue
            px, py = ax.x(x), ax.y(y)
            for lo, hi, horizontal in ((x - (xe or 0), x + (xe or 0), True),
                                       (y - (ye or 0), y + (ye or 0), False)):
                if horizontal and xlog or not horizontal and ylog:
                    # A log axis shows no end at or below zero: the bar runs to the axis's edge.
                    edge = 10 ** (ax.xt[0] if horizontal else ax.yt[0])
                    lo = max(lo, edge) if finite(lo) else edge
                if hi > lo and (horizontal and ax.ok(lo, y) or not horizontal and ax.ok(x, lo)):
                    if horizontal:
                        marks.append('<line class="err" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" '
                                     'stroke="%s"/>' % (ax.x(lo), ax.x(hi), py, py, c))
                    else:
                        marks.append('<line class="err" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" '
                                     'stroke="%s"/>' % (px, px, ax.y(lo), ax.y(hi), c))
            fill, stroke = ("white", FLAGGED) if flagged else (c, c)
            marks.append('<circle class="mark%s" cx="%.1f" cy="%.1f" r="5" fill="%s" stroke="%s" '
                         'stroke-width="2"><title>%s</title></circle>' %
                         (" flagged" if flagged else "", px, py, fill, stroke, esc(tip)))
        body.append('<g class="series" data-series="%s">%s</g>' % (esc(name), "".join(marks)))
        names.append(name)
        colors.append(c)
    return (svg(title, desc or "%s against %s, one marker a configuration; hollow red markers "
                "are flagged (overloaded or rejecting)." % (ylabel, xlabel), body, chart_id),
            legend(names, colors, chart_id))


def bars(chart_id, title, labels, values, ylabel, flagged=(), tips=None, desc=""):
    """One bar a label (a capacity option), flagged ones hatched red. Returns the svg."""
    ax = Axes([0, max(len(labels), 1)], [v for v in values if finite(v)], y0=True)
    body = ax.frame("", ylabel, xticks=False)
    n = max(len(labels), 1)
    slot = (W - LEFT - RIGHT) / n
    for i, (label, v) in enumerate(zip(labels, values)):
        x0 = LEFT + slot * i + slot * 0.15
        short = label if len(label) <= 18 else label[:17] + "…"
        body.append('<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>' %
                    (x0 + slot * 0.35, H - BOTTOM + 16, esc(short)))
        if not finite(v):
            continue
        top, base = ax.y(v), ax.y(0)
        c = FLAGGED if i in flagged else PALETTE[0]
        tip = tips[i] if tips else "%s: %s" % (label, number(v))
        body.append('<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s">'
                    '<title>%s</title></rect>' % (x0, min(top, base), slot * 0.7,
                                                  abs(base - top), c, esc(tip)))
    return svg(title, desc or "%s per option; red bars are flagged." % ylabel, body, chart_id)


def spans(chart_id, title, lanes, xlabel, ylabel, kinds):
    """A timeline: LANES [(name, [(start, duration, kind, tip, size)])], one row each: a bar per
    span from its start to its end, as tall as its SIZE against the largest, coloured by KINDS'
    order. Returns (svg, legend)."""
    xs = [v for _, ev in lanes for s, d, _, _, _ in ev for v in (s, s + d)]
    top = max([z for _, ev in lanes for _, _, _, _, z in ev] + [1e-300])
    ax = Axes(xs, [0, 1])
    body = ax.frame(xlabel, ylabel, yticks=False)
    n = max(len(lanes), 1)
    lane_h = (H - TOP - BOTTOM) / n
    groups = {k: [] for k in kinds}
    for i, (name, ev) in enumerate(lanes):
        y0 = TOP + lane_h * i
        body.append('<text class="tick" x="%d" y="%.1f">%s</text>' % (LEFT + 4, y0 + 14,
                                                                      esc(name)))
        for s, d, kind, tip, size in ev:
            h = max(lane_h * 0.85 * size / top, 0.5)
            groups.setdefault(kind, []).append(
                '<rect x="%.2f" y="%.1f" width="%.2f" height="%.1f"><title>%s</title></rect>' %
                (ax.x(s), y0 + lane_h * 0.95 - h, max(ax.x(s + d) - ax.x(s), 0.3), h,
                 esc(tip)))
    names = list(groups)
    colors = [PALETTE[i % len(PALETTE)] for i in range(len(names))]
    for name, c in zip(names, colors):
        body.append('<g class="series" data-series="%s" fill="%s">%s</g>' %
                    (esc(name), c, "".join(groups[name])))
    return (svg(title, "Each engine step as a bar from its start to its end, as tall as its "
                "tokens, one row a replica, coloured by the step's kind.", body, chart_id),
            legend(names, colors, chart_id))
