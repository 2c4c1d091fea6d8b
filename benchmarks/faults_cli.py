"""Fault cases of the ``bigkern`` command line (issue 23): ignored parameters, tracebacks,
destroyed files.

Each case runs the real command in a subprocess and records its exit code, the first line
of its stderr that is not the connection's status, and whether anything the user had was
lost (a file overwritten) or a wrong result reported as good (a parameter ignored with
exit 0). ``run_cases`` is what ``benchmarks/faults.py`` calls; run standalone it prints
the table::

    python benchmarks/faults_cli.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

from bigkern.datasets import make_scenes
from bigkern.jobs.fit import fit_scenes
from bigkern.models import load_model, save_model
from bigkern.scenes import write_scenes

_USER_BYTES = b"%PDF-1.4 the user's own report"


def _run(argv: list[str], cwd: pathlib.Path, timeout: float = 300
         ) -> tuple[int, str, float]:
    env = {**os.environ}
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "bigkern", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    return done.returncode, _first_line(done.stderr), time.perf_counter() - t


def _first_line(stderr: str) -> str:
    """The line that says what happened: the error (or interruption) line, else the first."""
    if "Traceback" in stderr:
        return "TRACEBACK: " + stderr.strip().splitlines()[-1]
    lines = [line for line in stderr.splitlines() if line.strip()
             and not line.startswith("bigkern: connected to ") and " - distributed." not in line]
    told = [line for line in lines if "error:" in line
            or line in ("bigkern: interrupted", "bigkern: terminated")]
    return (told or lines or ["(nothing on stderr)"])[0]


def _case(case: str, rc: int, line: str, seconds: float, *, ok: bool, lost: bool
          ) -> dict[str, object]:
    return {"case": case, "outcome": f"exit {rc} in {seconds:.1f} s: {line}", "ok": ok,
            "lost": lost}


def _refusals(tmp: pathlib.Path, store: pathlib.Path) -> list[dict[str, object]]:
    """Values that must be refused before any file is read (exit 2, one line)."""
    cases = [
        ("synth --workers 0", ["synth", "-o", "w.zarr", "--workers", "0"]),
        ("synth --scenes 0", ["synth", "-o", "e.zarr", "--scenes", "0"]),
        ("synth --seed -5", ["synth", "-o", "n.zarr", "--seed", "-5"]),
        ("fit --param omega=1e-300", ["fit", str(store), "-o", "m1.zarr", "--param",
                                      "omega=1e-300"]),
        ("fit --param omega=1e300", ["fit", str(store), "-o", "m2.zarr", "--param",
                                     "omega=1e300"]),
        ("fit --param C=3 --param C=[1,3]", ["fit", str(store), "-o", "m3.zarr", "--param",
                                             "C=3", "--param", "C=[1,3]"]),
        ("predict --timeout 0", ["predict", str(store), "m.zarr", "-o", "p.zarr",
                                 "--timeout", "0"]),
    ]
    out = []
    for case, argv in cases:
        rc, line, seconds = _run(argv, tmp)
        written = [p.name for p in tmp.iterdir() if p.name in {"w.zarr", "e.zarr", "n.zarr"}]
        out.append(_case(case, rc, line, seconds,
                         ok=rc == 2 and not line.startswith("TRACEBACK"),
                         lost=rc == 0 or bool(written)))
    return out


def _fixed_params(tmp: pathlib.Path, store: pathlib.Path) -> dict[str, object]:
    rc, line, seconds = _run(["fit", str(store), "-o", "fixed.zarr", "--param", "C=3",
                              "--param", "omega=0.5", "--workers", "1"], tmp)
    if rc != 0:
        return _case("fit --param C=3 --param omega=0.5 (search on)", rc, line, seconds,
                     ok=False, lost=False)
    model = load_model(tmp / "fixed.zarr")
    honoured = (model.C, model.omega) == (3, 0.5)
    return {"case": "fit --param C=3 --param omega=0.5 (search on)",
            "outcome": f"exit 0 in {seconds:.1f} s: fitted C={model.C:g}, "
                       f"omega={model.omega:g}", "ok": honoured, "lost": not honoured}


def _figures(tmp: pathlib.Path, store: pathlib.Path, model: pathlib.Path
             ) -> list[dict[str, object]]:
    report = tmp / "report.pdf"
    report.write_bytes(_USER_BYTES)
    rc, line, seconds = _run(["predict", str(store), str(model), "-o", "p1.zarr", "--png",
                              str(report), "--workers", "1"], tmp)
    out = [_case("predict --png report.pdf (a file of the user's)", rc, line, seconds,
                 ok=rc != 0, lost=report.read_bytes() != _USER_BYTES)]
    rc, line, seconds = _run(["predict", str(store), str(model), "-o", "p2.zarr", "--png",
                              "mydir", "--workers", "1"], tmp)
    out.append(_case("predict --png mydir", rc, line, seconds,
                     ok=rc != 0 and not (tmp / "mydir.png").exists(), lost=False))
    demo = tmp / "demo"
    demo.mkdir()
    (demo / "scene0.png").write_bytes(_USER_BYTES)
    rc, line, seconds = _run(["demo", "-o", str(demo), "--scenes", "1", "--shape", "32", "32",
                              "--workers", "1"], tmp)
    out.append(_case("demo over a foreign scene0.png", rc, line, seconds, ok=rc != 0,
                     lost=(demo / "scene0.png").read_bytes() != _USER_BYTES))
    return out


def _interrupted(tmp: pathlib.Path, sig: int, name: str) -> dict[str, object]:
    env = {**os.environ}
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    where = tmp / f"interrupted-{name}"
    where.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "bigkern", "synth", "-o", "big.zarr",
                             "--scenes", "40", "--shape", "2048", "2048", "--workers", "1"],
                            cwd=where, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if "connected to" in line:
            break
    time.sleep(1.0)
    t = time.perf_counter()
    os.killpg(proc.pid, sig)  # the whole group, as a terminal's Ctrl-C or a batch scheduler
    rest = proc.stderr.read()
    proc.wait(timeout=120)
    left = sorted(p.name for p in where.iterdir())
    line = _first_line("".join(lines) + rest)
    return {"case": f"synth killed by {name} to its process group",
            "outcome": f"exit {proc.returncode} {time.perf_counter() - t:.1f} s after the "
                       f"signal: {line}; left behind: {left or 'nothing'}",
            "ok": proc.returncode == 128 + sig and not line.startswith("TRACEBACK")
                  and not left,
            "lost": False}


def run_cases(tmp: pathlib.Path, quick: bool = False) -> list[dict[str, object]]:
    """Run the CLI's fault cases in ``tmp``; one dict per case (case, outcome, ok, lost)."""
    tmp = pathlib.Path(tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    ds = make_scenes(2, (48, 64), seed=4, radiances=False).compute()
    with _local_client():
        store = write_scenes(ds, tmp / "s.zarr", overwrite=True)
        model = save_model(fit_scenes(ds, search=False, params={"omega": 0.8, "C": 1.0}).model,
                           tmp / "m.zarr", overwrite=True)
    cases = _refusals(tmp, store)
    cases.append(_fixed_params(tmp, store))
    cases += _figures(tmp, store, model)
    if not quick:
        cases.append(_interrupted(tmp, signal.SIGINT, "SIGINT"))
        cases.append(_interrupted(tmp, signal.SIGTERM, "SIGTERM"))
    return cases


def _local_client():
    """Local threads for the set-up's small writes (no cluster needed)."""
    import dask

    return dask.config.set(scheduler="threads")


def _print(cases: list[dict[str, object]]) -> None:
    width = max(len(str(c["case"])) for c in cases)
    print(f"{'case':<{width}}  ok    lost   outcome")
    for c in cases:
        print(f"{c['case']:<{width}}  {'yes' if c['ok'] else 'NO':<5} "
              f"{'LOST' if c['lost'] else 'no':<6} {c['outcome']}")
    print(f"\n{sum(bool(c['ok']) for c in cases)} of {len(cases)} safe; "
          f"{sum(bool(c['lost']) for c in cases)} lost anything")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="skip the interrupted runs")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bigkern-faults-cli-") as tmp:
        _print(run_cases(pathlib.Path(tmp), quick=options.quick))
