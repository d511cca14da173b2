"""python -m results.golden: rewrite results/golden/*.json from the Python code."""

from results import golden

golden.write()
print(f"wrote {golden.SUMMARY_PATH} and {golden.ROWS_PATH}")
