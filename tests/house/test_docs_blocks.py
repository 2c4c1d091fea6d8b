"""The Python in README.md and in the documentation's pages runs as written.

Every fenced block whose info string is ``python`` is run; a block fenced as
```` ```python notest ```` is shown, not run (kept for what needs a remote cluster or a
cloud bucket; there is one, on the clusters page). How:

- README.md has one example, a script: it is written to a file and run as ``python
  example.py`` in a fresh temporary directory, as a reader would run it (so it must
  keep its ``if __name__ == "__main__":`` guard).
- The pages of ``docs/`` that hold Python (``docs/**/*.md``: the getting-started page and
  the user guide) are shared between two more Python processes, each running its pages
  one after the other: each page in a fresh temporary directory and a namespace of its
  own, its blocks in order like the cells of a notebook (so a block may use what an
  earlier block of its page made). A failure names the page and the line of the block,
  and does not stop the next page.

The three processes start together. Both run with one BLAS thread and with one worker in
the LocalCluster that ``bigkern.connect()`` builds (the setting
``BIGKERN_CLUSTER__PROFILES__LOCAL__N_WORKERS=1``, as a user would give it): the blocks
work on the few small synthetic scenes they make themselves, and the file takes well
under a minute on two quiet cores.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import bigkern

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TIMEOUT = 300  # seconds for every page together

FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")


def python_blocks(text: str) -> list[tuple[int, str, bool]]:
    """``(line of the first code line, code, runs)`` of each ```python block of ``text``."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        words = opening["info"].split()
        indent, fence = len(opening["indent"]), opening["fence"]
        end = i + 1
        while end < len(lines):
            closing = FENCE.match(lines[end])
            if (closing and not closing["info"].strip() and closing["fence"][0] == fence[0]
                    and len(closing["fence"]) >= len(fence)):
                break
            end += 1
        if words[:1] == ["python"]:
            code = "\n".join(line[indent:] for line in lines[i + 1:end])
            blocks.append((i + 2, code, "notest" not in words[1:]))
            i = end + 1
        else:
            i += 1  # other fences (directives) may hold python blocks: look inside
    return blocks


def doc_pages() -> list[Path]:
    skip = {DOCS / "_build", DOCS / "api" / "generated", DOCS / "notebooks"}
    return sorted(p for p in DOCS.rglob("*.md")
                  if not any(s in p.parents for s in skip) and python_blocks(p.read_text()))


# Runs the pages given in a JSON file, one after the other: each in its own folder and
# namespace, its blocks in order, compiled with the page's name and line numbers so that a
# traceback points into the page; what a page prints goes to its log, and a result file
# says whether (and at which block) it failed. A page that fails does not stop the next.
RUNNER = """\
import ast, contextlib, json, os, sys, time, traceback


def run_page(page, blocks, log):
    namespace = {"__name__": "__main__"}
    with open(log, "w") as out, contextlib.redirect_stdout(out), \\
            contextlib.redirect_stderr(out):
        for line, code in blocks:
            print(f"--- {page}:{line}", flush=True)
            try:
                tree = ast.parse(code, filename=page)
                ast.increment_lineno(tree, line - 1)
                exec(compile(tree, page, "exec"), namespace)
            except BaseException:
                traceback.print_exc()
                return f"{page}:{line}"
    return None


def main():
    for page, folder, blocks in json.load(open(sys.argv[1])):
        os.chdir(folder)
        start = time.monotonic()
        failed = run_page(page, blocks, os.path.join(folder, "log.txt"))
        with open(os.path.join(folder, "result.json"), "w") as f:
            json.dump({"failed": failed, "seconds": time.monotonic() - start}, f)


if __name__ == "__main__":
    main()
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DASK_SCHEDULER_ADDRESS"}
    env["MPLBACKEND"] = "Agg"
    # a small machine's worth: one BLAS thread, and one worker for bigkern.connect()'s
    # LocalCluster (bigkern's own setting, as a user would set it)
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               BIGKERN_CLUSTER__PROFILES__LOCAL__N_WORKERS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


class Run:
    """A process running some pages' blocks, and where each page's outcome will be."""

    def __init__(self, args: list[str], cwd: Path, output: str = "output.txt"):
        self.output = cwd / output
        with open(self.output, "w") as out:
            self.proc = subprocess.Popen(args, cwd=cwd, env=_env(), stdout=out,
                                         stderr=subprocess.STDOUT)

    def wait(self, result: Path | None, deadline: float) -> None:
        """Wait until ``result`` is written (or, without one, the process ends)."""
        while not (result is not None and result.exists()) and self.proc.poll() is None:
            if time.monotonic() > deadline:
                self.proc.kill()
                pytest.fail(f"still running after {TIMEOUT} s:\n{self.tail()}")
            time.sleep(0.2)

    def tail(self, n: int = 8000) -> str:
        return self.output.read_text()[-n:]


RUNNERS = 2  # processes that share the pages of docs/


def _start(pages: list[Path], base: Path) -> dict[Path, tuple[Run, Path | None]]:
    """Start the README's script and the processes for the pages of docs/ in ``pages``."""
    started: dict[Path, tuple[Run, Path | None]] = {}
    jobs: list[list[object]] = []
    for i, page in enumerate(pages):
        name = str(page.relative_to(ROOT))
        blocks = [(line, code) for line, code, runs in python_blocks(page.read_text()) if runs]
        folder = base / f"page{i}"
        folder.mkdir()
        if page == ROOT / "README.md":  # its one example, as a script
            (folder / "example.py").write_text(blocks[0][1] + "\n")
            started[page] = (Run([sys.executable, "example.py"], folder), None)
        else:
            jobs.append([page, name, str(folder), blocks])
    (base / "runner.py").write_text(RUNNER)
    for k in range(RUNNERS):  # every RUNNERS-th page, in the order of PAGES
        share = jobs[k::RUNNERS]
        if share:
            (base / f"pages{k}.json").write_text(json.dumps([job[1:] for job in share]))
            run = Run([sys.executable, str(base / "runner.py"), str(base / f"pages{k}.json")],
                      base, output=f"output{k}.txt")
            for page, _, folder, _ in share:
                started[page] = (run, Path(folder) / "result.json")
    return started


PAGES = [ROOT / "README.md", *doc_pages()]


@pytest.fixture(scope="module")
def running(request, tmp_path_factory):
    """The processes for every page whose test was selected, started at once."""
    selected = [page for page in PAGES if any(
        item.module is sys.modules[__name__] and getattr(item, "callspec", None)
        and item.callspec.params.get("page") == page for item in request.session.items)]
    started = _start(selected, tmp_path_factory.mktemp("docs-blocks"))
    yield started, time.monotonic() + TIMEOUT
    for run, _ in started.values():
        if run.proc.poll() is None:
            run.proc.kill()
            run.proc.wait()


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_python_blocks_run_as_written(page, running):
    started, deadline = running
    run, result = started[page]
    run.wait(result, deadline)
    if result is None:  # the README's script
        assert run.proc.returncode == 0, f"README.md's example failed:\n{run.tail()}"
        return
    assert result.exists(), f"the runner stopped before {page.name}:\n{run.tail()}"
    outcome = json.loads(result.read_text())
    log = (result.parent / "log.txt").read_text()
    assert outcome["failed"] is None, (f"{outcome['failed']} failed after "
                                       f"{outcome['seconds']:.1f} s:\n{log[-8000:]}")
    print(f"{page.relative_to(ROOT)}: {outcome['seconds']:.1f} s")


def test_block_parser_finds_fences_inside_directives_and_notest():
    text = "\n".join([
        "# page", "```python", "a = 1", "```", "````{note}", "```python", "b = a",
        "```", "````", "```python notest", "connect('tcp://far:8786')", "```",
        "```bash", "echo no", "```"])
    assert python_blocks(text) == [(3, "a = 1", True), (7, "b = a", True),
                                   (11, "connect('tcp://far:8786')", False)]


def test_readme_starts_with_the_two_commands_and_has_one_example():
    readme = (ROOT / "README.md").read_text()
    assert readme.startswith(
        "# bigkern\n\n```bash\npip install \".[plot]\" && bigkern demo\n"
        "pip install \".[test]\" && python -m pytest -q\n```\n")
    blocks = python_blocks(readme)
    assert len(blocks) == 1 and blocks[0][2]
    assert 'if __name__ == "__main__":' in blocks[0][1]


def test_the_api_reference_lists_every_public_name():
    listed = set(re.findall(r"^   (\w+)$", (DOCS / "api" / "index.md").read_text(), re.M))
    missing = set(bigkern._SOURCES) - listed
    assert not missing, f"docs/api/index.md lacks {sorted(missing)}"
