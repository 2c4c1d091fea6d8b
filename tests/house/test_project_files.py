"""The project's own files agree with the code: citation metadata, contributing guide."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

import bigkern

ROOT = Path(__file__).resolve().parents[2]


def test_citation_names_this_version_and_the_five_papers():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["version"] == bigkern.__version__
    assert cff["license"] == "BSD-3-Clause"
    assert all(a.get("name") or a.get("family-names") for a in cff["authors"])
    firsts = sorted(ref["authors"][0]["family-names"] for ref in cff["references"])
    assert firsts == ["Hagiwara", "Lee", "Lippert", "Shi", "Zhang"]
    assert all(ref["title"] and ref["year"] for ref in cff["references"])


def test_contributing_gives_the_readmes_test_command():
    readme = (ROOT / "README.md").read_text()
    test_command = re.findall(r"^pip install \"\.\[test\]\" && (.+)$", readme, re.M)[0]
    assert test_command in (ROOT / "CONTRIBUTING.md").read_text()


def test_contributing_names_only_markers_the_suite_declares():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    declared = {m.split(":")[0] for m in tomllib.loads(
        (ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]}
    named = set(re.findall(r"^- `(\w+)` —", (ROOT / "CONTRIBUTING.md").read_text(), re.M))
    assert named == declared
