"""servesim.plot from Python: plot() draws servesim's files and returns the PNGs it wrote, and a
bad file raises servesim.Error naming it (scripts/test-plots checks what the PNGs show)."""
import os
import subprocess

import pytest

import servesim
import servesim.plot

SERVESIM = os.environ.get("SERVESIM", "servesim")


def test_plot_returns_the_pngs_it_wrote(tmp_path):
    out = tmp_path / "c.h5"
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # the binary links its own
    subprocess.run([SERVESIM, "compare", "--scheduler", "chunked:512,vllm-v1", "--num-requests",
                    "150", "--out", str(out)], check=True, capture_output=True, env=env)
    pngs = servesim.plot.plot([out], tmp_path / "png", describe=str(tmp_path / "d.json"))
    assert sorted(os.path.basename(p) for p in pngs) == [
        "c_itl_cdf.png", "c_timeseries.png", "c_ttft_cdf.png"]
    for p in pngs:
        with open(p, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"not hdf5")
    with pytest.raises(servesim.Error) as e:
        servesim.plot.plot([out, bad], tmp_path / "png2")
    assert e.value.file == str(bad)
    assert not (tmp_path / "png2").exists()  # every file is read before anything is drawn
    with pytest.raises(servesim.Error) as e:
        servesim.plot.plot([out], tmp_path / "png3", alarm_fractoin=0.5)
    assert e.value.field == "alarm_fractoin"
