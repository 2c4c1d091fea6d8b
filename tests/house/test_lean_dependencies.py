"""Lean dependencies: figures and extended precision are extras.

``pip install bigkern`` pulls in neither matplotlib nor python-flint (nor mpmath);
whatever needs one of them says which extra to install. The absence is made in a
fresh interpreter by ``sys.modules[name] = None``, which makes ``import name`` fail
as it does where the package is not installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import requires
from pathlib import Path

import pytest


def _names(extra: str | None) -> set[str]:
    """The distributions bigkern's installed metadata requires, bare or with ``extra``."""
    out = set()
    for req in requires("bigkern") or []:
        spec, _, marker = req.partition(";")
        if (extra is None) == (not marker) and (extra is None or f'"{extra}"' in marker):
            name = spec.split("[")[0]
            for sep in "<>=!~ ":
                name = name.split(sep)[0]
            out.add(name.strip().lower())
    return out


def test_the_install_needs_neither_matplotlib_nor_extended_precision():
    """What ``pip install .`` installed says so (its metadata, not the source's)."""
    hard = _names(None)
    assert "numpy" in hard and "dask" in hard
    assert not hard & {"matplotlib", "python-flint", "mpmath"}, hard
    assert _names("plot") == {"matplotlib"}
    assert _names("precision") == {"python-flint", "mpmath"}
    # the test command installs what the tests of those capabilities need
    assert {"matplotlib", "python-flint", "mpmath"} <= _names("test")


def _without(modules: tuple[str, ...], code: str, *args: str, cwd: Path
             ) -> subprocess.CompletedProcess:
    block = "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
    return subprocess.run([sys.executable, "-c", f"import sys\n{block}{code}", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ))


def test_a_figure_without_matplotlib_names_the_plot_extra(tmp_path):
    code = (
        "import bigkern\n"
        "from bigkern.datasets import make_scenes\n"
        "scenes = make_scenes(1, (8, 8), seed=0)\n"
        "try:\n"
        "    bigkern.plot_scene(scenes, scenes.rename(label='cloud_mask'))\n"
        "except bigkern.MissingExtraError as err:\n"
        "    print('refused:', err)\n"
    )
    done = _without(("matplotlib",), code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "refused: plot_scene needs matplotlib" in done.stdout
    assert "pip install 'bigkern[plot]'" in done.stdout


def test_extended_precision_without_flint_or_mpmath_names_the_precision_extra(tmp_path):
    code = (
        "import numpy as np, bigkern\n"
        "x = np.linspace(0, 1, 12)[:, None]\n"
        "try:\n"
        "    bigkern.GaussianRLS(precision='extended').fit(x, np.sin(6 * x[:, 0]))\n"
        "except bigkern.MissingExtraError as err:\n"
        "    print('refused:', err)\n"
    )
    done = _without(("flint", "mpmath"), code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "extended precision needs python-flint or mpmath" in done.stdout
    assert "pip install 'bigkern[precision]'" in done.stdout
    # mpmath alone is the fallback: no error then
    alone = _without(("flint",), code.replace("refused", "X"), cwd=tmp_path)
    assert alone.returncode == 0 and "X:" not in alone.stdout, alone.stdout + alone.stderr


def test_png_without_matplotlib_is_a_usage_error_before_anything_is_read(tmp_path):
    code = "from bigkern.cli.main import main\nraise SystemExit(main(sys.argv[1:]))\n"
    done = _without(("matplotlib",), code, "predict", "s.zarr", "m.zarr", "-o", "p.zarr",
                    "--png", "p.png", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "--png draws with matplotlib" in done.stderr
    assert "bigkern[plot]" in done.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_the_demo_without_matplotlib_writes_everything_but_the_figure_and_says_so(tmp_path):
    code = ("from bigkern.cli.main import main\n"
            "raise SystemExit(main(sys.argv[1:]))\n")
    done = _without(("matplotlib",), code, "demo", "-o", "out", "--scenes", "1", "--shape",
                    "64", "96", "--workers", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "not drawn: matplotlib is not installed (pip install 'bigkern[plot]')" in done.stdout
    assert (tmp_path / "out" / "predictions.zarr").is_dir()
    assert not (tmp_path / "out" / "scene0.png").exists()
