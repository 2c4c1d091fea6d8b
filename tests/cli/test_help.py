"""Every option of the command line says what it does, and each command shows examples.

And ``--connect-timeout`` bounds the wait for a scheduler that does not answer.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time

import pytest

from bigkern.cli.main import main
from bigkern.cli.parser import build_parser


def _parsers() -> dict[str, argparse.ArgumentParser]:
    top = build_parser()
    (sub,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    return {"bigkern": top, **sub.choices}


@pytest.mark.parametrize("name", list(_parsers()))
def test_every_option_has_help_and_the_command_has_examples(name):
    parser = _parsers()[name]
    silent = [a.option_strings or [a.dest] for a in parser._actions
              if not isinstance(a, argparse._SubParsersAction) and not a.help]
    assert not silent, f"{name}: options without help text: {silent}"
    assert parser.epilog and parser.epilog.startswith("examples:"), name
    examples = [line.strip() for line in parser.epilog.splitlines()[1:]]
    assert examples and all(e.startswith("bigkern ") for e in examples), examples
    if name != "bigkern":
        assert all(e.startswith(f"bigkern {name}") for e in examples), examples
    text = parser.format_help()
    assert all(e in text for e in examples)  # kept as written, not re-wrapped


def test_each_example_parses():
    parser = build_parser()
    for sub in _parsers().values():
        for line in sub.epilog.splitlines()[1:]:
            words = line.split()[1:]
            if "--help" in words:
                continue
            parser.parse_args([w.strip("'") for w in words])  # exits on a bad example


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_a_connect_timeout_that_is_not_a_positive_duration_is_a_usage_error(value, capsys):
    assert main(["synth", "-o", "s.zarr", "--connect-timeout", value]) == 2
    assert "--connect-timeout is a number of seconds above 0" in capsys.readouterr().err


@pytest.mark.slow
def test_connect_timeout_bounds_the_wait_for_a_silent_scheduler(tmp_path):
    # a port that accepts connections and never answers: the scheduler handshake waits
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        address = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        t = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "bigkern", "synth", "-o", str(tmp_path / "s.zarr"),
             "--scheduler", address, "--connect-timeout", "2"],
            capture_output=True, text=True, timeout=120, env=dict(os.environ))
        took = time.perf_counter() - t
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert f"cannot connect to the Dask scheduler at {address}: no answer in 2 s" in last, last
    assert took < 25, took  # 2 s to give up, and the process's start-up; not the 30 s default
    assert not (tmp_path / "s.zarr").exists()
