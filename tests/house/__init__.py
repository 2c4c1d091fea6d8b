"""Tests of the package as a whole: import rules, public names, docs, notebooks, project files."""
