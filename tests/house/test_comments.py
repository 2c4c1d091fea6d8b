"""Comments that explain, not narrate: no measured figure in the library's own text.

A comment or docstring in ``bigkern/`` says why the code is as it is. A measured
figure — a timing such as "took 40 ms", a speed ratio such as "3× faster", a rate
such as "2,500 tasks/s" — and a citation of a benchmark's output file
(``benchmarks/results/...``) belong on the benchmark pages (``docs/benchmarks/``)
or in ``CHANGELOG.md``, beside the command that produced them, where they can be
rerun and dated. In the code they go stale without anyone noticing.

What is scanned
---------------
Every ``bigkern/**/*.py`` and ``bigkern/bigkern.yaml``, as plain text: comments,
docstrings, messages and code alike. Line breaks (with the indentation and the
``#``/``#:`` that starts the next comment line) are read as one space, so that a
figure split over two lines is still found; but a comment that starts below a line
of code does not continue that line.

What counts as a figure
-----------------------
* a number followed by a time unit: ``ns``, ``µs``, ``us``, ``ms`` (with or
  without a space), ``s``, ``sec``, ``h`` (after a space: ``"4s"`` in a
  :mod:`struct` format or ``"1s"`` as a dask interval is code), or a unit spelt
  out (``seconds``, ``minutes``, ``min``, ``hours``);
* a ratio of speed or time: a number followed by ``×`` or ``x`` and, within a
  few words, ``faster``, ``slower``, ``quicker``, ``speed`` or ``time``
  ("2.5× slower", "1.6x the time", "0.99× the time of"); a percentage followed
  by ``faster`` or ``slower``;
* a rate: a number followed by a unit per second (``GFLOP/s``, ``tasks/s``,
  ``pixels/s`` …) or by a few words and ``per second``.

A product such as ``2×10³ rows`` or ``1e-13 ×`` its scale is not a ratio of
speed, and a number without a unit (``timeout=60``) is not a timing.

What is exempt
--------------
A default is a value the code chooses, not a measurement: a figure within a few
words after the word "default" ("dask's default 15 s", "the default 300 s"), or
followed by "by default" ("15 s by default"), is not reported. The few other
legitimate figures are listed in :data:`ALLOWED`, each with why.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

#: The library's source in the repository of these tests (not whichever bigkern is
#: installed), found upwards from this file wherever tests/ lays it.
PACKAGE = next(p / "bigkern" for p in Path(__file__).resolve().parents
               if (p / "bigkern" / "bigkern.yaml").is_file())

#: A plain number: 5, 0.35, 1,000, 2.5e3; a range's last number (0.35–0.39) is enough.
_NUMBER = r"(?<![\w.])\d+(?:[.,]\d+)*(?:e[+-]?\d+)?"
#: A time unit after a number: the short ones that are also code only after a space.
_TIME = (rf"{_NUMBER}(?:\s?(?:ns|µs|μs|us|ms)"
         r"|\s(?:s|sec|secs|h|hrs?)"
         r"|\s?(?:seconds?|minutes?|mins?|hours?))(?![\w/])")
#: A ratio of speed or time: "3× faster", "~10x slower", "1.6x the time", "2.06× one
#: thread's time"; and "27% faster".
_RATIO = (rf"{_NUMBER}\s?[×x](?:\s+[\w'’-]+){{0,4}}?\s+(?:faster|slower|quicker|speed|time)\b"
          rf"|{_NUMBER}\s?%\s+(?:faster|slower|quicker)\b")
#: A rate: "30 GFLOP/s", "2,500 tasks/s", "3–4 million pixels per second".
_RATE = (rf"{_NUMBER}\s?(?:[kMG]?FLOP|[kMG]i?B|tasks|pixels|rows|values|keys)/s\b"
         rf"|{_NUMBER}(?:\s+[\w-]+){{0,3}}\s+per\s+(?:second|minute|hour)\b")
FIGURE = re.compile(rf"{_TIME}|{_RATIO}|{_RATE}")
#: A figure that is a default: "default 15 s", "default: x, 30 s", "15 s by default".
_DEFAULT_BEFORE = re.compile(r"\bdefault\b(?:(?!\.\s)[^;()]){0,50}$", re.IGNORECASE)
_DEFAULT_AFTER = re.compile(r"^\s*by default\b", re.IGNORECASE)
#: What a line break between code and a comment below it is read as (see _flatten).
BARRIER = "\x00"
#: A citation of a benchmark's output file.
CITATION = re.compile(r"benchmarks/results\b")

#: (file below bigkern/, phrase) → why the figures in the phrase are not measurements.
ALLOWED: dict[tuple[str, str], str] = {
    ("cluster/watchdog.py", "every 1 to 5 seconds"):
        "the watchdog's poll interval, a design value (poll_interval)",
    ("cluster/watchdog.py", "one small call every 1-5 s"):
        "the same poll interval",
    ("cluster/watchdog.py", "a twentieth of the timeout up to 5 s"):
        "the poll interval's bound, as poll_interval computes it",
    ("cluster/progress.py", "bigkern: binning: 30% of 412 tasks, 12.4 s"):
        "an example of the progress lines' format",
    ("cluster/progress.py", "bigkern: binning: 60% of 412 tasks, 24.9 s"):
        "an example of the progress lines' format",
    ("cluster/progress.py", "bigkern: binning: done, 412 tasks in 40.2 s"):
        "an example of the progress lines' format",
    ("cluster/progress.py", "bigkern: binning: 12% of 200 tasks, 1.5 s"):
        "a doctest's output",
    ("cluster/progress.py", "bigkern: binning: 31% of 200 tasks, 3.0 s"):
        "a doctest's output",
    ("cluster/progress.py", "bigkern: binning: done, 200 tasks in 4.0 s"):
        "a doctest's output",
    ("bigkern.yaml", "lost_worker_timeout: 10 minutes"):
        "a setting's default value",
}


def _flatten(text: str) -> tuple[str, list[int]]:
    """``text`` with each line break, and the indentation and comment marker after it,
    read as one space; and, for each character of the result, its line in ``text``.

    A comment that starts below a line of code (``paused_timeout: 30`` above
    ``# Seconds ...``) does not continue it: that break is read as :data:`BARRIER`,
    which no pattern crosses.
    """
    out: list[str] = []
    lines: list[int] = []
    line = 1
    in_comment = False  # whether the line before the next break is (or ends in) a comment
    for piece in re.split(r"(\s*\n[ \t]*(?:#:?[ \t]*)?)", text):
        if "\n" in piece:
            starts_comment = "#" in piece
            out.append(BARRIER if starts_comment and not in_comment else " ")
            lines.append(line)
            line += piece.count("\n")
            in_comment = starts_comment
        else:
            out.append(piece)
            lines.extend([line] * len(piece))
            in_comment = in_comment or "#" in piece
    return "".join(out), lines


def _is_default(flat: str, start: int, end: int) -> bool:
    return bool(_DEFAULT_BEFORE.search(flat[max(0, start - 60):start])
                or _DEFAULT_AFTER.match(flat[end:end + 20]))


def _allowed_spans(flat: str, name: str) -> list[tuple[int, int]]:
    spans = []
    for (where, phrase), _why in ALLOWED.items():
        if where == name:
            spans += [(m.start(), m.end()) for m in re.finditer(re.escape(phrase), flat)]
    return spans


def figures(text: str, name: str = "") -> list[tuple[int, str]]:
    """The measured figures and result citations of ``text``: (line, what was found).

    ``name`` is the file's path below ``bigkern/``, for :data:`ALLOWED`.

    Examples
    --------
    >>> figures("x = 1  # took 1.2 s on 2 cores")
    [(1, '1.2 s')]
    >>> figures("timeout = 60  # seconds before giving up")
    []
    """
    flat, lines = _flatten(text)
    allowed = _allowed_spans(flat, name)
    found = []
    for m in FIGURE.finditer(flat):
        if _is_default(flat, m.start(), m.end()):
            continue
        if any(a <= m.start() and m.end() <= b for a, b in allowed):
            continue
        found.append((lines[m.start()], m.group(0)))
    found += [(lines[m.start()], m.group(0)) for m in CITATION.finditer(flat)]
    return sorted(found)


def _library_files() -> list[Path]:
    return sorted([*PACKAGE.rglob("*.py"), PACKAGE / "bigkern.yaml"])


# --------------------------------------------------------------------------------------
# the rule, on the library
# --------------------------------------------------------------------------------------
def test_the_library_quotes_no_measured_figure_and_cites_no_benchmark_output() -> None:
    found = []
    for path in _library_files():
        name = path.relative_to(PACKAGE).as_posix()
        found += [f"bigkern/{name}:{line}: {what!r}"
                  for line, what in figures(path.read_text(encoding="utf-8"), name)]
    assert not found, (
        "measured figures or benchmark citations in the library (put them on the "
        "matching page of docs/benchmarks/ with the command that produced them, or in "
        "CHANGELOG.md, and say in the code why, in words):\n" + "\n".join(found))


def test_every_allowed_phrase_is_still_there() -> None:
    """A stale exemption would silently cover a new figure with the same words."""
    texts = {p.relative_to(PACKAGE).as_posix(): _flatten(p.read_text(encoding="utf-8"))[0]
             for p in _library_files()}
    missing = [f"{where}: {phrase!r}" for where, phrase in ALLOWED
               if phrase not in texts.get(where, "")]
    assert not missing, "exemptions whose phrase is gone:\n" + "\n".join(missing)


# --------------------------------------------------------------------------------------
# the check itself: it finds what it must and nothing else
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    ("# took 1.2 s on 2 cores", "1.2 s"),
    ("# one compiled sweep, ~34 ms per 8.4 M × 3 values", "34 ms"),
    ("# took 40ms on 2 cores", "40ms"),
    ("# spare the limit's ~20 µs a step", "20 µs"),
    ("# numpy's fancy indexing took ~50 ns a row", "50 ns"),
    ("# 0.35–0.39 s per 1,000 tasks", "0.39 s"),
    ("# a run of 46 min", "46 min"),
    ("# it took 3 seconds", "3 seconds"),
    ("# written out: a helper call here is 10x slower", "10x slower"),
    ("# 3× faster than the BLAS path", "3× faster"),
    ("# the fits 2.5–4× slower", "4× slower"),
    ("# as a call the sweep took 1.6x the time", "1.6x the time"),
    ("# took 2.06× one thread's time", "2.06× one thread's time"),
    ("# CG 0.58–1.45× the direct fit's\n# time at m = 500", "1.45× the direct fit's time"),
    ("# an iterative solve (27% faster at 7.5 M nonzeros)", "27% faster"),
    ("# measured: 1.3-1.6 vs 30-36 GFLOP/s", "36 GFLOP/s"),
    ("# (~2,500 tasks/s)", "2,500 tasks/s"),
    ("# 3–4 million pixels per second per core", "4 million pixels per second"),
    ("# see benchmarks/results/scale.txt", "benchmarks/results"),
    ('"""Measured at 10⁶ rows\n    (``benchmarks/results/x.txt``)."""', "benchmarks/results"),
])
def test_a_planted_figure_is_found(text: str, expected: str) -> None:
    assert [what for _, what in figures(text)] == [expected]


@pytest.mark.parametrize("text", [
    "timeout = 60",
    "paused_timeout: 30",
    'size, kind = struct.unpack(">I4s", head[at:at + 8])',
    'follower = _Follower(futures, interval="1s", complete=True)',
    'f"    {k:<22s}{v:7.2f} s"',
    "# 2×10³ rows × 200 centers",
    "# below 1e-13 × its scale",
    "# 10^5 rows x 500 centers take 0.4 GB",
    "# the second of 3 samples",
    "# (dask's default 15 s); bigkern waits this long instead.",
    '"(default: distributed.comm.timeouts.connect, 30 s)"',
    "# lost-worker-timeout\n        # (15 s by default) after the scheduler lost it",
    "# twice the speed of the float64 products",
    "# numpy's ** is much faster here",
    "# 8.4 M rows × 3 features",
])
def test_no_figure_in_legitimate_text(text: str) -> None:
    assert figures(text) == []


def test_a_figure_split_over_two_comment_lines_is_found_on_its_first_line() -> None:
    text = "x = 1\n#: the path took 0.99×,\n#: 0.77× and 0.34× the time of the direct CV\n"
    assert figures(text) == [(3, "0.34× the time")]
    text = "y = 2\n# a fit 2.5–4×\n#   slower than without\n"
    assert figures(text) == [(2, "4× slower")]


def test_an_allowed_phrase_covers_only_its_own_file() -> None:
    line = "    bigkern: binning: 30% of 412 tasks, 12.4 s\n"
    assert figures(line, "cluster/progress.py") == []
    assert figures(line, "cluster/compute.py") == [(1, "12.4 s")]
