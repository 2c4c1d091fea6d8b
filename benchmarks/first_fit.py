"""The first fit in a fresh process (issue 26, acceptance 5): ``ReducedSVC().fit`` on 1,000 rows.

Each repeat starts a new Python process that imports bigkern, then times its
first ``ReducedSVC().fit`` (the smooth hinge, Newton–Armijo) and then its first
``ReducedSVC(loss="squared_hinge").fit`` on the same 1,000 × 8 rows (seeded
Gaussian features, labels from a quadratic boundary), with no distributed client.
The compiled (numba) functions come from their on-disk cache:

* ``warm cache``: numba's cache as this checkout has it (the usual case once
  ``deploy/warm_numba.py`` or any earlier fit has run);
* ``cold cache``: ``NUMBA_CACHE_DIR`` pointed at an empty directory, so every
  compiled function the fit needs is compiled in the process (a fresh install
  that skipped the warm-up step; the cache is then written for the next process).

Both float64 rows (numpy kernels) and float32 rows (the compiled kernels of a
MISR-like store) are timed. The peer is scikit-learn's ``SVC().fit`` on the same
rows, first fit in a fresh process. Import times are printed apart from the fits.
Goal: the first ``ReducedSVC().fit`` in a fresh process (warm cache) under 0.5 s.

    python benchmarks/first_fit.py [--repeat 5] [--small]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

#: What each fresh process runs; prints one JSON line of seconds.
CHILD = """
import json, time
t0 = time.perf_counter()
import numpy as np
{imports}
t1 = time.perf_counter()
rng = np.random.default_rng(0)
X = rng.standard_normal((1000, 8))
y = np.where(X[:, 0] + X[:, 1] ** 2 > 1.0, 1, -1)
X = X.astype({dtype!r})
times = {{"import": t1 - t0}}
for name, make in {fits}:
    t = time.perf_counter()
    make().fit(X, y)
    times[name] = time.perf_counter() - t
print(json.dumps(times))
"""

BIGKERN = {dtype: CHILD.format(
    imports="from bigkern import ReducedSVC", dtype=dtype,
    fits='[("smooth hinge", ReducedSVC), '
         '("squared hinge", lambda: ReducedSVC(loss="squared_hinge"))]')
    for dtype in ("float64", "float32")}
SKLEARN = CHILD.format(imports="from sklearn.svm import SVC", dtype="float64",
                       fits='[("SVC", SVC)]')


def fresh(code: str, env: dict[str, str] | None = None) -> dict[str, float]:
    """Run ``code`` in a new interpreter; its JSON line of timings."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, **(env or {})})
    return json.loads(out.stdout.strip().splitlines()[-1])


def summary(runs: list[dict[str, float]], key: str) -> str:
    values = sorted(r[key] for r in runs)
    return (f"{1000 * values[0]:.0f} / {1000 * values[len(values) // 2]:.0f} / "
            f"{1000 * values[-1]:.0f}")


def run(args: Any) -> None:
    C.header("first fit in a fresh process: ReducedSVC().fit on 1,000 x 8 rows")
    print(f"# {args.repeat} fresh processes per row; min / median / max in ms")
    rows: list[list[str]] = []
    warm = {}
    for dtype, code in BIGKERN.items():
        warm[dtype] = [fresh(code) for _ in range(args.repeat)]
        cold = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="bigkern-numba-") as cache:
                cold.append(fresh(code, {"NUMBA_CACHE_DIR": cache}))
        for label, runs in ((f"bigkern {dtype} rows, warm cache", warm[dtype]),
                            (f"bigkern {dtype} rows, cold cache", cold)):
            rows.append([label, summary(runs, "import"), summary(runs, "smooth hinge"),
                         summary(runs, "squared hinge")])
    peer = [fresh(SKLEARN) for _ in range(args.repeat)]
    rows.append(["scikit-learn SVC", summary(peer, "import"), summary(peer, "SVC"), "-"])
    C.print_table(["process", "import ms", "first fit ms (smooth hinge / SVC)",
                   "then squared hinge ms"], rows)
    medians = {dtype: sorted(r["smooth hinge"] for r in runs)[len(runs) // 2]
               for dtype, runs in warm.items()}
    worst = max(medians.values())
    print(f"goal (issue 26, acceptance 5): first ReducedSVC().fit in a fresh process under "
          f"0.5 s (warm cache, median, either dtype): {'MET' if worst < 0.5 else 'MISSED'} ("
          + ", ".join(f"{d} {1000 * v:.0f} ms" for d, v in medians.items()) + ")")


def main() -> None:
    p = C.parser(__doc__.split("\n")[0], "first_fit")
    p.add_argument("--repeat", type=int, default=5, help="fresh processes per row")
    p.add_argument("--out", type=Path, default=None, help="output file")
    args = p.parse_args()
    if args.small:
        args.repeat = 1
    C.run_teed("first_fit", args.small, args.out, lambda: run(args))


if __name__ == "__main__":
    main()
