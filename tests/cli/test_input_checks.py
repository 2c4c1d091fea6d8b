"""A missing store, model or feature is said before any cluster starts."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _bigkern(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bigkern", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))


def _refused_early(done: subprocess.CompletedProcess, code: int, *words: str) -> None:
    assert done.returncode == code, done.stderr
    assert "connected to" not in done.stderr  # no cluster was started, nor reached
    error = done.stderr.strip().splitlines()[-1]
    for word in words:
        assert word in error, error


def test_a_missing_store_is_said_before_a_cluster_starts(tmp_path):
    done = _bigkern("fit", tmp_path / "missing.zarr", "-o", tmp_path / "m.zarr", cwd=tmp_path)
    _refused_early(done, 1, "no scene store at", "missing.zarr")
    assert not (tmp_path / "m.zarr").exists()


@pytest.mark.parametrize("flags, named", [
    (["--features", "NDAI", "NOPE"], "--features"),
    (["--features", "NDAI", "CORR", "--model", "nystrom-krr", "--target", "SST"], "--target"),
])
def test_an_absent_feature_or_target_is_a_usage_error_before_a_cluster_starts(
        scene_store, tmp_path, flags, named):
    done = _bigkern("fit", scene_store, "-o", tmp_path / "m.zarr", *flags, cwd=tmp_path)
    _refused_early(done, 2, named, "NOPE" if named == "--features" else "SST",
                   "logSD (from SD)")


def test_a_derived_feature_whose_source_is_stored_is_accepted(scene_store, tmp_path):
    # logSD is not stored but derived from SD: the check lets it through (the fit then runs;
    # a bad --param makes it stop at once, after the feature check, without a cluster)
    done = _bigkern("fit", scene_store, "-o", tmp_path / "m.zarr", "--features", "logSD",
                    "--param", "omega=-1", cwd=tmp_path)
    _refused_early(done, 2, "--param omega=-1")


def test_a_missing_model_is_said_before_a_cluster_starts(scene_store, tmp_path):
    done = _bigkern("predict", scene_store, tmp_path / "none.zarr", "-o", tmp_path / "p.zarr",
                    cwd=tmp_path)
    _refused_early(done, 1, "no model at", "none.zarr")


def _command(*args: str | Path) -> subprocess.CompletedProcess:
    """``bigkern ARGS`` run in this process (as the shell would, less the interpreter's start)."""
    from bigkern.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_dims_maps_a_time_store_through_fit_and_predict(tmp_path, client):
    from bigkern.datasets import make_scenes
    from bigkern.scenes.writing import write_scenes
    from bigkern.store.integrity import open_checked

    scenes = make_scenes(2, (48, 64), seed=5, radiances=False).rename(scene="time")
    store = write_scenes(scenes, tmp_path / "t.zarr", dims={"scene": "time"})
    on = ("--scheduler", client.scheduler.address)  # the session's cluster, in this process
    fit = ["fit", store, "-o", tmp_path / "m.zarr", "--no-search", "--param", "omega=0.8",
           "--param", "C=1", *on]
    found = _command(*fit)  # without the mapping: found by its name, and said
    assert found.returncode == 0, found.stderr
    assert "dims of" in found.stdout and "scene=time (its name)" in found.stdout
    assert _command(*fit, "--dims", "scene=time", "--overwrite").returncode == 0
    done = _command("predict", store, tmp_path / "m.zarr", "-o", tmp_path / "p.zarr",
                    "--dims", "scene=time", *on)
    assert done.returncode == 0, done.stderr
    assert open_checked(tmp_path / "p.zarr")["cloud_mask"].dims == ("time", "y", "x")


def test_dims_that_cannot_be_found_are_refused_naming_the_flags(tmp_path):
    from bigkern.datasets import make_scenes

    scenes = make_scenes(2, (16, 24), seed=5, radiances=False)
    scenes.rename(scene="a", y="b", x="c").to_zarr(tmp_path / "abc.zarr")
    refused = _bigkern("fit", tmp_path / "abc.zarr", "-o", tmp_path / "m.zarr", cwd=tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.count("\n") == 1, refused.stderr  # one line
    assert "--dims scene=a --dims y=b --dims x=c" in refused.stderr
    assert not (tmp_path / "m.zarr").exists()


@pytest.mark.parametrize("item, words", [
    ("scene", "takes OURS=THEIRS"),
    ("time=scene", "'time' is not one of bigkern's dims"),
])
def test_a_malformed_dims_is_a_usage_error_before_anything_is_read(tmp_path, item, words):
    done = _bigkern("fit", tmp_path / "absent.zarr", "-o", tmp_path / "m.zarr", "--dims", item,
                    cwd=tmp_path)
    _refused_early(done, 2, "--dims", words)


# what a refused command line may not load: each costs from a tenth of a second to a few
# seconds to import, and none is needed to say that a path, a name or a value is wrong
_HEAVY = ("sklearn", "scipy", "xarray", "pandas", "dask.array", "distributed", "numba")
_REPORT_IMPORTS = (
    "import sys\n"
    "from bigkern.cli.main import main\n"
    "try:\n"
    "    code = main(sys.argv[1:])\n"
    "finally:\n"
    f"    print('loaded:', [m for m in {_HEAVY!r} if m in sys.modules], file=sys.stderr)\n"
    "sys.exit(code)\n"
)


@pytest.mark.parametrize("args, code, words", [
    (["fit", "missing.zarr", "-o", "m.zarr"], 1, "no scene store at missing.zarr"),
    (["fit", "{store}", "-o", "m.zarr", "--features", "NOPE"], 2, "has no variable NOPE"),
    (["fit", "{store}", "-o", "m.zarr", "--param", "omega=-1"], 2, "omega must be positive"),
    (["fit", "missing.zarr", "-o", "m.zarr", "--param", "C=[1,inf]"], 2,
     "C must be a finite number"),
    (["predict", "{store}", "none.zarr", "-o", "p.zarr"], 1, "no model at none.zarr"),
])
def test_a_refused_command_loads_no_heavy_library(scene_store, tmp_path, args, code, words):
    """Refused at once: none of _HEAVY imported, nothing written (benchmarks/cli_errors.py
    times it)."""
    argv = [a.format(store=scene_store) for a in args]
    done = subprocess.run([sys.executable, "-c", _REPORT_IMPORTS, *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert done.returncode == code, done.stderr
    *said, loaded = done.stderr.strip().splitlines()
    assert words in said[-1], done.stderr
    assert loaded == "loaded: []", done.stderr
    assert not any(tmp_path.iterdir())  # no output, no claim left behind


def test_the_early_check_of_widths_and_penalties_is_the_estimators_own():
    """check_magnitudes checks POSITIVE_PARAMS against the parameter table's domains, which
    every CLI model declares as its own."""
    from sklearn.utils._param_validation import Interval

    from bigkern.cli.checks import POSITIVE_PARAMS
    from bigkern.models._constraints import domain
    from bigkern.models.registry import specs

    assert {"omega", "C", "lam"} <= POSITIVE_PARAMS
    for spec in specs():
        if spec.cli is None:
            continue
        for name in POSITIVE_PARAMS & set(spec.cls._parameter_constraints):
            domains = [c for c in spec.cls._parameter_constraints[name]
                       if isinstance(c, Interval)]
            assert len(domains) == 1, (spec.name, name)
            (declared,) = domains
            table = domain(name)
            assert (declared.type, declared.left, declared.right, declared.closed) == (
                table.type, table.left, table.right, table.closed), (spec.name, name)


@pytest.mark.parametrize("layout", ["bigkern", "unconsolidated v3", "v2"])
def test_the_variables_read_as_json_are_those_zarr_lists(tmp_path, layout):
    """The refusal reads a local v3 store's metadata as JSON, without zarr: it must list what
    zarr lists (and hand stores of other layouts to zarr)."""
    import zarr

    from bigkern.datasets import make_scenes
    from bigkern.scenes.writing import write_scenes
    from bigkern.store.zarr_store import _v3_variables, stored_variables

    scenes = make_scenes(1, (8, 8), seed=0)
    store = tmp_path / "s.zarr"
    if layout == "bigkern":
        write_scenes(scenes, store)
    else:
        scenes.to_zarr(store, consolidated=False, zarr_format=3 if layout.endswith("v3") else 2)
    group = zarr.open_group(store, mode="r")
    by_zarr = sorted(name for name, array in group.arrays()
                     if tuple(getattr(array.metadata, "dimension_names", None)
                              or array.attrs.get("_ARRAY_DIMENSIONS", ())) != (name,))
    assert stored_variables(store) == by_zarr
    assert "NDAI" in by_zarr and "x" not in by_zarr
    assert (_v3_variables(store) is None) == (layout == "v2")
