"""The page around the sections: one HTML file, its style and script inline, a Content Security
Policy that lets it fetch nothing (it opens from disk or an e-mail attachment), headings a
screen reader can walk. The script only adds what helps (show or hide a series, sort a table,
choose a frontier's axes); without it every table and the default charts read the same."""

CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1180px;padding:0 20px 40px;
color:#111;background:#fff}
h1{font-size:1.6em;margin:.8em 0 .2em}h2{font-size:1.3em;margin:1.6em 0 .3em;
border-bottom:2px solid #ccc}h3{font-size:1.05em;margin:1.2em 0 .3em}
.meta{color:#333}.meta code{white-space:pre-wrap;word-break:break-all}
dl.pairs{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:.4em 0}
dl.pairs dt{font-weight:600}dl.pairs dd{margin:0;word-break:break-all}
.flags{border-left:5px solid #C00000;background:#fff3f3;padding:6px 12px;margin:.6em 0}
.flags li{margin:.2em 0}
.scroll{overflow-x:auto}table{border-collapse:collapse;margin:.5em 0;font-size:.9em}
caption{text-align:left;font-weight:600;padding:4px 0}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:right;vertical-align:top}
th[scope=row],td.t{text-align:left;font-weight:500}thead th{background:#f2f2f2}
button.sort{font:inherit;font-weight:600;background:none;border:0;padding:0;cursor:pointer}
.ci{color:#555;font-size:.85em}
figure{margin:1em 0}figcaption{color:#333;font-size:.9em}
svg.chart{width:100%;max-width:760px;height:auto;display:block;font-size:12px}
svg .grid{stroke:#e4e4e4}svg .axes{fill:none;stroke:#777}svg .tick{fill:#333}
svg .label{fill:#111;font-weight:600}
.legend{display:flex;flex-wrap:wrap;gap:4px 10px;margin:4px 0}
button.key{font:inherit;font-size:.9em;background:#fafafa;border:1px solid #ccc;
border-radius:3px;padding:1px 6px;cursor:pointer}button.key[aria-pressed=false]{opacity:.45}
.note{color:#444;font-size:.9em}.headline{font-size:1.1em;font-weight:600}
nav ol{margin:.3em 0}
"""

SCRIPT = """
(function(){
  document.querySelectorAll('button.key').forEach(function(b){
    b.addEventListener('click',function(){
      var on=b.getAttribute('aria-pressed')!=='false';
      b.setAttribute('aria-pressed',on?'false':'true');
      var svg=document.getElementById(b.dataset.chart);
      if(!svg)return;
      svg.querySelectorAll('g.series').forEach(function(g){
        if(g.dataset.series===b.dataset.series)g.style.display=on?'none':'';});
    });
  });
  function key(cell){
    var v=cell.getAttribute('data-value');
    try{var x=JSON.parse(v);if(typeof x==='number')return x;
      if(x===null)return Infinity;return String(x);}catch(e){return cell.textContent;}
  }
  document.querySelectorAll('table.sortable').forEach(function(t){
    t.querySelectorAll('thead th').forEach(function(th,i){
      var b=th.querySelector('button.sort');if(!b)return;var up=true;
      b.addEventListener('click',function(){
        var rows=Array.prototype.slice.call(t.tBodies[0].rows);
        rows.sort(function(a,c){var x=key(a.cells[i]),y=key(c.cells[i]);
          var r=(typeof x==='number'&&typeof y==='number')?x-y:String(x).localeCompare(String(y));
          return up?r:-r;});
        rows.forEach(function(r){t.tBodies[0].appendChild(r);});
        t.querySelectorAll('thead th').forEach(function(h){h.removeAttribute('aria-sort');});
        th.setAttribute('aria-sort',up?'ascending':'descending');up=!up;
      });
    });
  });
  document.querySelectorAll('form.chooser').forEach(function(f){
    f.hidden=false;
    var box=document.querySelector('[data-pairs="'+f.dataset.chart+'"]');
    function show(){
      var x=f.elements.x.value,y=f.elements.y.value;
      box.querySelectorAll('.pair').forEach(function(p){
        p.hidden=!(p.dataset.x===x&&p.dataset.y===y);});
    }
    f.addEventListener('change',show);
  });
})();
"""

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy"
 content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="servesim report {{ version }}">
<title>{{ title }}</title>
<style>{{ css|safe }}</style>
</head>
<body>
<header>
<h1>{{ title }}</h1>
<p class="meta">Made by <code>servesim report</code> from
{{ sections|length }} file{{ '' if sections|length == 1 else 's' }} written by servesim
{{ version }}. Every figure is one the
file holds; hover over a chart's line or point for its value, press a legend key to hide a
series, press a column's name to sort.</p>
{% if sections|length > 1 %}<nav aria-label="files"><ol>
{% for s in sections %}<li><a href="#{{ s.id }}">{{ s.title }}</a></li>{% endfor %}
</ol></nav>{% endif %}
</header>
<main>
{% for s in sections %}
<section id="{{ s.id }}" data-kind="{{ s.kind }}" aria-labelledby="{{ s.id }}-h">
<h2 id="{{ s.id }}-h">{{ s.title }}</h2>
<dl class="pairs meta" aria-label="where the file comes from">
<dt>file</dt><dd><code>{{ s.path }}</code></dd>
{% for k, v in s.provenance %}<dt>{{ k }}</dt><dd data-provenance="{{ k }}">
{%- if k == 'command line' %}<code>{{ v }}</code>{% else %}{{ v }}{% endif %}</dd>
{% endfor %}</dl>
{% if s.flags %}<div class="flags" role="note" aria-label="warnings">
<strong>Read these first:</strong><ul>
{% for f in s.flags %}<li>{{ f }}</li>{% endfor %}</ul></div>{% endif %}
{% for heading, body in s.blocks %}
<h3>{{ heading }}</h3>
{{ body|safe }}
{% endfor %}
</section>
{% endfor %}
</main>
<script>{{ script|safe }}</script>
</body>
</html>
"""


def render(title, version, sections):
    import jinja2  # Debian's python3-jinja2: needed for pages only, not to import servesim
    page = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    return page.from_string(TEMPLATE).render(title=title, version=version, sections=sections,
                                             css=CSS, script=SCRIPT)
