"""The command never ignores a parameter, never leaks a traceback, never destroys a file it did
not write.

* Every out-of-range value fails before any file is read, with one line naming the flag and
  exit code 2; a ``--param`` given without ``--no-search`` is fixed while the others are
  searched.
* Expected failures are one line: no credentials for S3, a bucket that vanished, Ctrl-C
  (ended by SIGINT, which a shell reports as 130) and SIGTERM (exit 143), after which nothing
  hidden is left and a prediction resumes.
* ``--png`` and the demo's figure replace only a PNG bigkern drew, and only with
  ``--overwrite``.

Commands run as real subprocesses (``python -m bigkern``); those that compute connect to the
session's LocalCluster (``--scheduler``) so that no test pays for a cluster of its own, except
the interrupted ones, which run their own embedded cluster as a user's command does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import dask.config
import numpy as np
import pytest

from bigkern.cli.main import main
from bigkern.cli.parser import build_parser
from bigkern.datasets import make_scenes
from bigkern.jobs.fit import fit_scenes
from bigkern.models import load_model, save_model
from bigkern.scenes import write_scenes
from bigkern.store.figure_files import is_bigkern_png
from bigkern.store.integrity import open_checked
from tests.held_tasks import held_tasks_env

try:  # the moto S3 server of tests/store/test_s3_end_to_end.py, a module fixture
    from tests.store.test_s3_end_to_end import s3
except (ImportError, pytest.skip.Exception):
    s3 = None

pytestmark = [pytest.mark.slow_file(seconds=70), pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def stores(tmp_path_factory, client) -> dict[str, Path]:
    """A small scene store and a model of it, on the session cluster."""
    root = tmp_path_factory.mktemp("cli-params")
    ds = make_scenes(2, (48, 64), seed=4, radiances=False).compute()
    store = write_scenes(ds, root / "s.zarr")
    model = save_model(fit_scenes(ds, search=False, params={"omega": 0.8, "C": 1.0}).model,
                       root / "m.zarr")
    return {"root": root, "store": store, "model": model}


def _bigkern(*args: str | Path, cwd: Path, scheduler: str | None = None,
             env: dict[str, str] | None = None, timeout: float = 240
             ) -> subprocess.CompletedProcess:
    """``python -m bigkern ARGS`` in a fresh process (on ``scheduler`` when given)."""
    extra = ["--scheduler", scheduler] if scheduler else []
    full_env = {**os.environ, **(env or {})}
    full_env.pop("DASK_SCHEDULER_ADDRESS", None)
    return subprocess.run([sys.executable, "-m", "bigkern", *map(str, args), *extra],
                          cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=full_env)


def _error_line(stderr: str) -> str:
    """The one error line of stderr: no traceback, nothing but the connection's status."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines()
             if line.strip() and not line.startswith("bigkern: connected to ")
             and " - distributed." not in line]
    assert len(lines) == 1, stderr
    return lines[0]


# --- out-of-range values: refused before anything is read --------------------------------

_MISSING = "no-such-store.zarr"  # a run that read anything would fail on it instead
_BAD = [
    (["synth", "-o", "x.zarr", "--workers", "0"], "--workers must be at least 1; got 0"),
    (["synth", "-o", "x.zarr", "--workers", "-3"], "--workers must be at least 1"),
    (["synth", "-o", "x.zarr", "--scenes", "0"], "--scenes must be at least 1; got 0"),
    (["synth", "-o", "x.zarr", "--shape", "0", "64"], "--shape takes two sizes of at least 1"),
    (["synth", "-o", "x.zarr", "--seed", "-5"], "--seed must be from 0 to 4294967295"),
    (["demo", "--seed", str(2**32)], "--seed must be from 0 to 4294967295"),
    (["fit", _MISSING, "-o", "m.zarr", "--seed", "-1"], "--seed must be from 0"),
    (["fit", _MISSING, "-o", "m.zarr", "--param", "omega=1e-300"],
     "--param omega=1e-300: omega is a kernel width"),
    (["fit", _MISSING, "-o", "m.zarr", "--param", "omega=1e300"],
     "--param omega=1e300: omega is a kernel width"),
    (["fit", _MISSING, "-o", "m.zarr", "--param", "omega=5e-324"],
     "--param omega=5e-324: omega is denormal"),
    (["fit", _MISSING, "-o", "m.zarr", "--param", "omega=nan"],
     "--param omega=nan: omega must be a finite number"),
    (["fit", _MISSING, "-o", "m.zarr", "--param", "omega=inf"],
     "--param omega=inf: omega must be a finite number"),
    (["fit", _MISSING, "-o", "m.zarr", "--param", "omega=0"], "omega must be positive"),
    (["fit", _MISSING, "-o", "m.zarr", "--param", "C=-3"], "--param C=-3: C must be positive"),
    (["fit", _MISSING, "-o", "m.zarr", "--model", "ridge", "--param", "lam=1e20"],
     "--param lam=1e20: lam is a ridge penalty"),
    (["fit", _MISSING, "-o", "m.zarr", "--param", "omega=wide"], "omega takes a number"),
    (["fit", _MISSING, "-o", "m.zarr", "--param", "weighted=2"], "weighted is true or false"),
    (["fit", _MISSING, "-o", "m.zarr", "--model", "reduced-svc", "--param", "size=0"],
     "--param size=0: size is a number of centers"),
    (["fit", _MISSING, "-o", "m.zarr", "--model", "nystrom-krr", "--param", "lam=[0.1,-1]"],
     "--param lam=[0.1,-1]: lam must be positive"),
    (["fit", _MISSING, "-o", "m.zarr", "--param", "C=3", "--param", "C=[1,3]"],
     "--param C is given twice"),
    (["fit", _MISSING, "-o", "m.zarr", "--param", "C=[1,3]", "--no-search"],
     "a list is a set of candidates to search"),
    (["predict", _MISSING, "m.zarr", "-o", "p.zarr", "--timeout", "0"],
     "--timeout is a number of seconds above 0"),
    (["fit", _MISSING, "-o", "m.zarr", "--timeout", "nan"], "--timeout is a number of seconds"),
    (["synth", "-o", "x.zarr", "--timeout", "-1"], "--timeout is a number of seconds"),
]


@pytest.mark.parametrize(("argv", "says"), _BAD, ids=[" ".join(a) for a, _ in _BAD])
def test_out_of_range_values_fail_before_reading(argv, says, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"bigkern {argv[0]}: error: "), err
    assert says in err, err
    assert not any(tmp_path.iterdir()), "a refused command wrote something"


def test_bad_values_are_one_line_in_a_real_process(tmp_path):
    """Where the probe saw tracebacks (a negative seed, omega=1e300): exit 2 and one line."""
    for argv, says in [(["synth", "-o", "x.zarr", "--seed", "-5"], "--seed"),
                       (["fit", _MISSING, "-o", "m.zarr", "--param", "omega=1e300"],
                        "--param omega=1e300")]:
        done = _bigkern(*argv, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert says in _error_line(done.stderr)
    assert not any(tmp_path.iterdir())


# --- --param without --no-search: fixed, the rest searched ---------------------------------

@pytest.mark.slow
def test_param_values_are_fixed_while_the_others_are_searched(stores, client, tmp_path):
    addr = client.scheduler.address
    out = tmp_path / "fixed.zarr"
    done = _bigkern("fit", stores["store"], "-o", out, "--param", "C=3",
                    "--param", "omega=[0.5,2]", cwd=tmp_path, scheduler=addr)
    assert done.returncode == 0, done.stderr
    model = load_model(out)
    assert model.C == 3 and model.omega in (0.5, 2)
    assert "grid search over 2 svc models of omega" in done.stderr
    assert "C=3 fixed by --param" in done.stdout, done.stdout
    assert f"omega={model.omega:g} chosen by the held-out search" in done.stdout

    both = tmp_path / "both.zarr"
    done = _bigkern("fit", stores["store"], "-o", both, "--param", "C=3", "--param",
                    "omega=0.5", cwd=tmp_path, scheduler=addr)
    assert done.returncode == 0, done.stderr
    model = load_model(both)
    assert (model.C, model.omega) == (3, 0.5)
    assert "C=3, omega=0.5 fixed by --param; nothing left to search" in done.stdout


def test_a_parameter_both_fixed_and_searched_is_refused():
    ds = make_scenes(1, (8, 8), seed=0, radiances=False)
    with pytest.raises(ValueError, match=r"C given both as a fixed value \(C=3\) and as a grid"):
        fit_scenes(ds, grid={"C": [1.0, 10.0]}, params={"C": 3})


# --- --timeout ------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [["demo"], ["synth", "-o", "s.zarr"],
                                     ["fit", "s.zarr", "-o", "m.zarr"],
                                     ["predict", "s.zarr", "m.zarr", "-o", "p.zarr"]])
def test_timeout_sets_the_stall_timeout_for_the_command(command):
    from bigkern.cli.command_cluster import stall_timeout

    args = build_parser().parse_args([*command, "--timeout", "7.5"])
    before = dask.config.get("bigkern.stall_timeout")
    with stall_timeout(args):
        assert dask.config.get("bigkern.stall_timeout") == 7.5
    assert dask.config.get("bigkern.stall_timeout") == before
    with pytest.raises(SystemExit):
        build_parser().parse_args(["ingest", "misr-text", "a.txt", "-o", "s.zarr",
                                   "--timeout", "5"])  # ingest runs on no cluster


# --- figures -----------------------------------------------------------------------------

@pytest.mark.slow
def test_png_never_replaces_a_file_bigkern_did_not_draw(stores, client, tmp_path):
    addr = client.scheduler.address
    common = ("predict", stores["store"], stores["model"])
    report = tmp_path / "report.pdf"
    report.write_bytes(b"%PDF-1.4 the user's report")
    done = _bigkern(*common, "-o", "p1.zarr", "--png", report, cwd=tmp_path, scheduler=addr)
    assert done.returncode == 2 and "must end in .png" in _error_line(done.stderr)
    done = _bigkern(*common, "-o", "p1.zarr", "--png", "mydir", cwd=tmp_path, scheduler=addr)
    assert done.returncode == 2 and "must end in .png" in _error_line(done.stderr)
    assert not (tmp_path / "mydir.png").exists()

    theirs = tmp_path / "theirs.png"
    theirs.write_bytes(b"\x89PNG\r\n\x1a\n not bigkern's")
    done = _bigkern(*common, "-o", "p1.zarr", "--png", theirs, "--overwrite", cwd=tmp_path,
                    scheduler=addr)
    assert done.returncode == 1
    assert "was not drawn by bigkern" in _error_line(done.stderr)
    folder = tmp_path / "folder.png"
    folder.mkdir()
    done = _bigkern(*common, "-o", "p1.zarr", "--png", folder, "--overwrite", cwd=tmp_path,
                    scheduler=addr)
    assert done.returncode == 1 and "is a directory" in _error_line(done.stderr)
    assert report.read_bytes() == b"%PDF-1.4 the user's report"
    assert theirs.read_bytes() == b"\x89PNG\r\n\x1a\n not bigkern's"
    assert not (tmp_path / "p1.zarr").exists(), "refused before anything was read or written"


@pytest.mark.slow
def test_png_replaces_its_own_figure_only_with_overwrite(stores, client, tmp_path):
    addr = client.scheduler.address
    common = ("predict", stores["store"], stores["model"], "-o", "p.zarr", "--png", "fig.png")
    done = _bigkern(*common, cwd=tmp_path, scheduler=addr)
    assert done.returncode == 0, done.stderr
    fig = tmp_path / "fig.png"
    assert f"figure written to {fig}" in done.stdout and is_bigkern_png(fig)
    first = fig.read_bytes()
    again = _bigkern(*common, cwd=tmp_path, scheduler=addr)
    assert again.returncode == 1 and "fig.png exists" in _error_line(again.stderr)
    assert fig.read_bytes() == first
    replaced = _bigkern(*common, "--overwrite", cwd=tmp_path, scheduler=addr)
    assert replaced.returncode == 0, replaced.stderr
    assert is_bigkern_png(fig)
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".fig.png")]
    # --no-resume on the store this same job wrote says so (it said "a different job")
    refused = _bigkern("predict", stores["store"], stores["model"], "-o", "p.zarr",
                       "--no-resume", cwd=tmp_path, scheduler=addr)
    assert refused.returncode == 1
    line = _error_line(refused.stderr)
    assert "same job" in line and "different job" not in line, line


def test_demo_refuses_a_foreign_figure_before_writing(client, tmp_path):
    out = tmp_path / "demo"
    out.mkdir()
    (out / "scene0.png").write_bytes(b"my own picture")
    code = main(["demo", "-o", str(out), "--scenes", "1", "--shape", "16", "16",
                 "--scheduler", client.scheduler.address])
    assert code == 1
    assert (out / "scene0.png").read_bytes() == b"my own picture"
    assert sorted(p.name for p in out.iterdir()) == ["scene0.png"]


# --- interrupted commands ------------------------------------------------------------------

def _as_in_the_foreground() -> None:
    """In the child before ``exec``: SIGINT's default action, as a terminal's foreground
    command has it. A suite run as a background job (``.ci/run &``, ``nohup``) inherits an
    *ignored* SIGINT — a POSIX shell ignores it in asynchronous commands — and Python keeps
    an inherited ignore, so the command would rightly ignore the test's Ctrl-C: in two CI
    runs it ran on 120 s after it (SIGTERM, not ignored so, ended it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(argv: list[str], cwd: Path, sig: int, ready: callable,
               env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run the command in its own session, send ``sig`` to its process group (as a terminal's
    Ctrl-C does) once ``ready()``; return its exit code and stderr."""
    env = {**os.environ, **(env or {}), "PYTHONFAULTHANDLER": "1"}  # SIGABRT: every stack
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    proc = subprocess.Popen([sys.executable, "-m", "bigkern", *argv, "--workers", "1"],
                            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True, preexec_fn=_as_in_the_foreground)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    while not ready(lines) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "".join(lines)  # still running: the signal interrupts it
    os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:  # say where it stands, then fail
        os.kill(proc.pid, signal.SIGABRT)
        proc.wait(timeout=60)
        reader.join(timeout=10)
        raise AssertionError("the command ran on 120 s after the signal; its stderr, with "
                             "the stacks at SIGABRT:\n" + "".join(lines)[-12000:]) from None
    reader.join(timeout=10)
    return proc.returncode, "".join(lines)


def _connected(lines: list[str]) -> bool:
    # the command prints the line once Ctrl-C is its own again (its embedded cluster's
    # worker processes started ignoring it: bigkern.cli.signals.children_ignore_sigint)
    if any("connected to" in line for line in lines):
        time.sleep(1.0)
        return True
    return False


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code", "word"),
                         [(signal.SIGINT, -signal.SIGINT, "interrupted"),
                          (signal.SIGTERM, 143, "terminated")])
def test_an_interrupted_synth_says_so_and_leaves_nothing_hidden(tmp_path, sig, code, word):
    rc, err = _interrupt(["synth", "-o", "big.zarr", "--scenes", "40", "--shape", "2048",
                          "2048"], tmp_path, sig, _connected)
    assert rc == code, err
    assert _error_line(err) == f"bigkern: {word}"
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "a partial output was left"


@pytest.mark.slow
def test_an_interrupted_predict_resumes(stores, client, tmp_path):
    # eight scenes of one chunk each, as the interrupted command finds them; their size does
    # not matter, the held tasks keep it running (1024 x 1024 scenes cost the test ~20 s of
    # writing and predicting the rest)
    scenes = write_scenes(make_scenes(8, (256, 256), seed=5, radiances=False),
                          tmp_path / "big.zarr", chunks={"scene": 1, "y": 256, "x": 256})
    model = stores["model"]  # the module's (the same fit this test once made of its own)
    out = tmp_path / "p.zarr"

    def started(lines: list[str]) -> bool:
        # the store's template is whole (an interruption inside its creation is another
        # engineer's case: bigkern.store.regions)
        if all((out / name / "zarr.json").exists() for name in ("cloud_mask", "decision")):
            time.sleep(0.5)
            return True
        return False

    # each task starts 0.25 s late, so that the prediction is still running when the signal
    # comes (unheld, its 100 tasks once finished before a signal sent 0.5 s after its template)
    rc, err = _interrupt(["predict", str(scenes), str(model), "-o", str(out)], tmp_path,
                         signal.SIGINT, started, env=held_tasks_env())
    assert rc == -signal.SIGINT and _error_line(err) == "bigkern: interrupted", err
    again = _bigkern("predict", scenes, model, "-o", out, cwd=tmp_path,
                     scheduler=client.scheduler.address)
    assert again.returncode == 0, again.stderr
    assert "was started by the same prediction" in again.stdout, again.stdout
    hidden = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert hidden == [] or all(name.endswith(".lock") for name in hidden), hidden
    mask = open_checked(out)["cloud_mask"].isel(scene=0, y=slice(0, 64)).values
    assert np.isin(mask, (-1, 0, 1)).all() and (mask != 0).any()


# --- object stores: no credentials, a vanished bucket ---------------------------------------

@pytest.mark.slow
@pytest.mark.skipif(s3 is None, reason="moto[server] or s3fs is not installed")
def test_s3_failures_are_one_line(tmp_path, client, s3):
    options = s3
    base = {"FSSPEC_S3_ENDPOINT_URL": options["endpoint_url"],
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
            "AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_EC2_METADATA_DISABLED": "true"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    no_keys = subprocess.run(
        [sys.executable, "-m", "bigkern", "fit", "s3://bigkern-test/s.zarr", "-o", "m.zarr",
         "--scheduler", client.scheduler.address], cwd=tmp_path, capture_output=True,
        text=True, timeout=240, env={**env, **base})
    assert no_keys.returncode == 1, no_keys.stderr
    line = _error_line(no_keys.stderr)
    assert "credentials" in line and "s3://bigkern-test/s.zarr" in line, line
    keys = {"AWS_ACCESS_KEY_ID": options["key"], "AWS_SECRET_ACCESS_KEY": options["secret"]}
    gone = subprocess.run(
        [sys.executable, "-m", "bigkern", "synth", "-o", "s3://vanished-bucket/s.zarr",
         "--scheduler", client.scheduler.address], cwd=tmp_path, capture_output=True,
        text=True, timeout=240, env={**env, **base, **keys})
    assert gone.returncode == 1, gone.stderr
    line = _error_line(gone.stderr)
    assert "bucket" in line and "s3://vanished-bucket/s.zarr" in line, line
