"""Every writing command claims its output before its work starts.

``fit``, ``synth``, ``ingest`` and ``predict`` (and their ``--png``) hold the claim
from the start, and a second writer is refused at once: two ``fit --overwrite``
started together must not both exit 0 saying "model written" (the last to finish
silently winning), and without ``--overwrite`` the second must not compute a whole
fit before saying "exists".
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bigkern.cli.main import main
from bigkern.datasets import make_scenes
from bigkern.errors import StoreError
from bigkern.scenes import write_scenes
from bigkern.store.claims import claim_output, lock_location, shared_claim
from bigkern.store.outputs import PARTIAL_TAG
from bigkern.store.urls import location

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
WORKERS = ["--workers", "1"]

# a writer in another process: claims the output, says so, holds it until stdin closes
_HOLDER = """
import sys
from bigkern.store.claims import claim_output
with claim_output(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()
"""


@contextlib.contextmanager
def held_elsewhere(path: Path) -> Iterator[None]:
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path)], env=ENV,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
        holder.stdout.close()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("claims-first")
    scenes = make_scenes(2, (32, 48), seed=5, radiances=False).compute()
    store = write_scenes(scenes, root / "s.zarr")
    netcdf = root / "granule.nc"
    scenes[["NDAI", "SD", "CORR", "label"]].to_netcdf(netcdf, engine="h5netcdf")
    model = root / "m.zarr"
    assert main(["fit", str(store), "-o", str(model), "--model", "ridge", "--no-search",
                 "--param", "omega=0.8", "--param", "lam=0.05", *WORKERS]) == 0
    return {"store": Path(store), "netcdf": netcdf, "model": model}


def _command(kind: str, inputs: dict[str, Path], out: Path) -> list[str]:
    return {
        "fit": ["fit", str(inputs["store"]), "-o", str(out), "--model", "ridge",
                "--no-search", "--param", "omega=0.8", "--param", "lam=0.05"],
        "predict": ["predict", str(inputs["store"]), str(inputs["model"]), "-o", str(out)],
        "synth": ["synth", "-o", str(out), "--scenes", "1", "--shape", "32", "48"],
        "ingest": ["ingest", "auto", str(inputs["netcdf"]), "-o", str(out)],
    }[kind]


@pytest.mark.parametrize("kind", ["fit", "predict", "synth", "ingest"])
def test_a_second_writer_is_refused_before_any_work(kind: str, inputs: dict[str, Path],
                                                    tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.zarr"
    with held_elsewhere(out):
        t0 = time.perf_counter()
        workers = [] if kind == "ingest" else WORKERS  # ingest starts no cluster
        code = main([*_command(kind, inputs, out), "--overwrite", *workers])
        seconds = time.perf_counter() - t0
    err = capsys.readouterr().err
    assert code == 1, err
    assert "is being written by another command" in err and "\n" not in err.strip()
    assert seconds < 2.0, f"refused after {seconds:.1f} s: work was done first"
    assert not out.exists() and not list(tmp_path.glob(f".out.zarr{PARTIAL_TAG}*"))
    assert not lock_location(location(out)).exists()  # the holder released it


def test_a_figure_is_claimed_with_the_output(inputs: dict[str, Path], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    figure = tmp_path / "masks.png"
    with held_elsewhere(figure):
        code = main([*_command("predict", inputs, tmp_path / "p.zarr"), "--png", str(figure),
                     *WORKERS])
    assert code == 1
    assert "masks.png is being written by another command" in capsys.readouterr().err
    assert not (tmp_path / "p.zarr").exists()


def test_the_command_and_its_writer_share_one_claim(inputs: dict[str, Path],
                                                    tmp_path: Path) -> None:
    out = tmp_path / "m.zarr"
    with claim_output(out) as outer, shared_claim(outer), claim_output(out) as inner:
        assert inner is outer  # the command's claim, shared with its writer
    assert not lock_location(location(out)).exists()
    # not shared: a second writer is refused, even in this process
    with claim_output(out), pytest.raises(StoreError, match="being written by another"), \
            claim_output(out):
        pass
    assert main([*_command("fit", inputs, out), *WORKERS]) == 0
    assert out.exists() and not lock_location(location(out)).exists()


def test_two_fits_started_together_have_one_winner(inputs: dict[str, Path],
                                                   tmp_path: Path) -> None:
    """The probe's race: two real ``bigkern fit --overwrite`` processes at once."""
    out = tmp_path / "m.zarr"
    started = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-m", "bigkern",
                               *_command("fit", inputs, out), "--overwrite", *WORKERS],
                              env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    ended: dict[int, float] = {}
    while len(ended) < 2:
        for i, p in enumerate(procs):
            if i not in ended and p.poll() is not None:
                ended[i] = time.perf_counter() - started
        time.sleep(0.05)
    results = [(p.returncode, *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 1], results
    loser = next(i for i, (code, _, _) in enumerate(results) if code == 1)
    assert "is being written by another command" in results[loser][2], results[loser][2]
    assert "model written" not in results[loser][1]
    winner = 1 - loser
    # refused at its claim, before its cluster (the in-process test above times the refusal
    # itself: under 2 s; here a loaded test machine also starts two interpreters)
    assert ended[loser] < ended[winner], ended
    assert out.exists()
