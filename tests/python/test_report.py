"""servesim.report without a browser (tests/report/test_pages.py renders the pages in Chromium):
report= writes the page of what a function returns, and a damaged or foreign file is a
servesim.Error naming it, never a broken page or another exception."""
import json
import math
import os
import random
import re

import pytest

import servesim

SMALL = dict(num_requests=60, request_rate=4, seed=2)


def figures(page):
    """The page's figures: data-figure -> the value it holds (JSON)."""
    with open(page, encoding="utf-8") as f:
        text = f.read()
    return {html_unescape(k): json.loads(html_unescape(v)) for k, v in
            re.findall(r'data-figure="([^"]*)" data-value="([^"]*)"', text)}


def html_unescape(s):
    import html
    return html.unescape(s)


def test_report_keyword_writes_the_returned_runs_page(tmp_path):
    page = tmp_path / "run.html"
    r = servesim.run(report=page, **SMALL)
    got = figures(page)
    assert got["f0|%s|ttft_ms.p99" % r.label] == r.summary["ttft_ms"]["p99"]
    assert got["f0|%s|requests.completed" % r.label] == r.summary["requests"]["completed"]
    text = page.read_text()
    assert "servesim run --num-requests=60 --request-rate=4 --seed=2" in text
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")


def test_report_keyword_on_tables_and_verdicts(tmp_path):
    t = servesim.capacity("ttft_p99_ms=2000", report=tmp_path / "cap.html", num_requests=60)
    got = figures(tmp_path / "cap.html")
    for _, row in t.table.iterrows():
        assert got["f0|%d|capacity_req_s" % row["point"]] == row["capacity_req_s"]
    a = tmp_path / "a.h5"
    servesim.command("run", "--num-requests=60", "--request-rate=4", "--out=%s" % a)
    v = servesim.diagnose(a, a, report=tmp_path / "d.html")
    assert figures(tmp_path / "d.html")["f0|verdict|headline"] == v.headline
    with pytest.raises(servesim.Error, match="compares nothing"):
        servesim.check(tmp_path / "spec.ini", update=True, report=tmp_path / "c.html")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    servesim.command("run", "--num-requests=60", "--request-rate=4",
                     "--out=%s" % (d / "run.h5"), "--json=%s" % (d / "run.json"))
    servesim.command("run", "--num-requests=60", "--request-rate=8", "--out=%s" % (d / "b.h5"))
    servesim.command("diagnose", d / "run.h5", d / "b.h5", "--period-s=2",
                     "--json=%s" % (d / "diagnose.json"))
    return d


def test_damaged_and_foreign_files_are_errors_naming_them(files, tmp_path):
    head = (files / "run.h5").read_bytes()
    cases = {"truncated.h5": head[:3000], "empty.json": b"", "list.json": b"[1, 2]",
             "shape.json": b'{"verdict": {}, "alarm": {"windows": 5}}',
             "text.txt": "übung".encode("latin-1")}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        page = tmp_path / "page.html"
        with pytest.raises(servesim.Error) as e:
            servesim.report.write([files / "run.h5", tmp_path / name], page)
        assert str(tmp_path / name) in str(e.value) and e.value.file == str(tmp_path / name)
        assert not page.exists()
    with pytest.raises(servesim.Error, match="no such file"):
        servesim.report.write([tmp_path / "missing.h5"], tmp_path / "page.html")


@pytest.mark.parametrize("name", ["run.json", "diagnose.json"])
def test_mutated_json_gives_a_page_or_an_error(files, tmp_path, name):
    """Hostile input: 200 random byte edits of a run's JSON and of a verdict (which draws a
    chart) each give a page or servesim.Error naming the file; any other exception fails the
    test (the JSON loader's fuzzing)."""
    data = bytearray((files / name).read_bytes())
    rng = random.Random(49)
    pages = errors = 0
    for i in range(200):
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.choice(b'{}[]",:0123456789.-eE \n\x00\xff')
        f = tmp_path / "m.json"
        f.write_bytes(bytes(b))
        try:
            servesim.report.build([f])
            pages += 1
        except servesim.Error as e:
            assert e.file == str(f)
            errors += 1
    assert errors > 0 and pages > 0  # both paths taken


def test_charts_of_equal_or_nearly_equal_values():
    """An axis over values that differ in their last bits only (a fixed-length run's OTPS)."""
    from servesim.report import _svg
    for vs in ([100.0, 100.00000000000001], [0.1 + 0.2, 0.3], [1e-14, 1.0000001e-14], [0, 0],
               [7.0], [-3.0, -3.0]):
        ax = _svg.Axes(vs, vs)
        assert ax.xt[-1] > ax.xt[0] and ax.yt[-1] > ax.yt[0]
        assert all(math.isfinite(ax.x(v)) and math.isfinite(ax.y(v)) for v in vs)
        svg, _ = _svg.lines("c", "t", [("s", vs, vs, None)], "x (ms)", "y (ms)")
        assert "<polyline" in svg


def test_command_line_report(files, tmp_path):
    out = servesim.command("report", files / "run.h5", files / "run.json", "-o",
                           tmp_path / "both.html")
    assert "wrote" in out and os.path.getsize(tmp_path / "both.html") > 0
    got = figures(tmp_path / "both.html")
    assert any(k.startswith("f0|") for k in got) and any(k.startswith("f1|") for k in got)
    # The page maker's error, through the command: it names the file.
    (tmp_path / "bad.json").write_text("[")
    with pytest.raises(servesim.Error, match="bad.json"):
        servesim.command("report", tmp_path / "bad.json", "-o", tmp_path / "bad.html")
