"""The pieces a section is made of: tables whose cells carry the figure they show
(data-figure, data-value: what the browser test reads back against the file), lists, and key-value
blocks."""
import json
import math

from ._svg import esc, finite, number


def value_attr(v):
    """A figure as data-value holds it: JSON (a number at full precision, null, true, text)."""
    if isinstance(v, float) and not math.isfinite(v):
        return "null"
    if hasattr(v, "item"):  # a numpy scalar
        v = v.item()
    return json.dumps(v)


def shown(v, unit=""):
    if isinstance(v, str):
        return v
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if hasattr(v, "item"):
        v = v.item()
    return number(v) + unit


class Column:
    """A table column: KEY in each row, LABEL (with its unit) on top; INTERVALS: the row keys
    holding (lo, hi), or a half-width, each shown under the figure."""

    def __init__(self, key, label, *intervals):
        self.key, self.label = key, label
        self.intervals = [k for k in intervals if k]


def table(caption, columns, rows, prefix, row_key, note=""):
    """A sortable table: ROWS (dicts) by COLUMNS; each cell's data-figure is
    PREFIX|row's ROW_KEY value|column key."""
    head = "".join('<th scope="col"><button type="button" class="sort" title="sort">%s</button>'
                   '</th>' % esc(c.label) for c in columns)
    body = []
    for row in rows:
        cells = []
        for i, c in enumerate(columns):
            v = row.get(c.key)
            text = esc(shown(v))
            for k in c.intervals:
                iv = row.get(k)
                where = esc("%s|%s|%s" % (prefix, row[row_key], k))
                if finite(iv):  # a 95% interval's half-width over seeds
                    text += '<br><span class="ci" data-figure="%s" data-value="%s">± %s</span>' % (
                        where, esc(value_attr(iv)), esc(shown(iv)))
                elif isinstance(iv, (list, tuple)) and len(iv) == 2:  # a prediction interval
                    lo, hi = (x if finite(x) else None for x in iv)
                    text += ('<br><span class="ci" data-figure="%s" data-value="%s">%s to %s'
                             '</span>' % (where, esc(json.dumps([lo, hi])), esc(shown(lo)),
                                          esc(shown(hi))))
            tag = "th scope=\"row\"" if i == 0 else ("td class=\"t\"" if isinstance(v, str)
                                                     else "td")
            cells.append('<%s data-figure="%s" data-value="%s">%s</%s>' % (
                tag, esc("%s|%s|%s" % (prefix, row[row_key], c.key)), esc(value_attr(v)), text,
                tag.split()[0]))
        body.append("<tr>%s</tr>" % "".join(cells))
    return ('<div class="scroll"><table class="sortable"><caption>%s</caption><thead><tr>%s</tr>'
            '</thead><tbody>%s</tbody></table></div>%s' %
            (esc(caption), head, "".join(body), '<p class="note">%s</p>' % esc(note) if note
             else ""))


def pairs(caption, items):
    """A definition list of (label, value) ITEMS."""
    return '<dl class="pairs" aria-label="%s">%s</dl>' % (esc(caption), "".join(
        "<dt>%s</dt><dd>%s</dd>" % (esc(k), esc(shown(v))) for k, v in items))


def bullet(items, cls=""):
    return '<ul class="%s">%s</ul>' % (cls, "".join("<li>%s</li>" % esc(i) for i in items))


def figure(svg_text, legend_text, caption):
    return '<figure>%s%s<figcaption>%s</figcaption></figure>' % (svg_text, legend_text,
                                                                 esc(caption))


def flatten(d, prefix=""):
    """Nested dict D as (dotted key, value) pairs, lists as text."""
    out = []
    for k, v in d.items():
        key = prefix + "." + k if prefix else k
        if isinstance(v, dict):
            out += flatten(v, key)
        elif isinstance(v, list):
            out.append((key, ", ".join(str(x) for x in v) if v else "[]"))
        else:
            out.append((key, v))
    return out
