"""The papers' tables, reproduced on the shared real data by the benchmark scripts."""
