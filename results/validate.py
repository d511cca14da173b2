"""Check result files against the schema: python -m results.validate FILE...

Prints "FILE: N rows valid" for a good file. For a bad one, prints one line
per bad row on stderr, "FILE:LINE: FIELD: MESSAGE" (LINE 0 is the file as a
whole), in the style of compiler errors so editors can jump to them.
Exit status: 0 when every file is valid, 2 otherwise (also when a file
cannot be read, or belongs to a run that did not complete: its directory
holds bench-all's incomplete.json, results/run_state.py). Every message is
bounded, however long the line at fault (results/schema.py, excerpt).
`make validate FILE=...` runs this.
"""

import argparse
import sys

from results.runfile import RunFileError, incomplete
from results.schema import iter_file_errors


def check(path: str) -> bool:
    try:
        incomplete(path)  # an interrupted run's rows are not a run's, valid or not
    except RunFileError as e:
        print(e, file=sys.stderr)
        return False
    try:
        errors = list(iter_file_errors(path))
    except OSError as e:
        print(f"{path}: cannot read: {e.strerror or e}", file=sys.stderr)
        return False
    for line_no, field, message in errors:
        print(f"{path}:{line_no}: {field}: {message}", file=sys.stderr)
    if errors:
        return False
    # No errors means no blank lines: every line is a row.
    with open(path, "rb") as f:
        n_rows = sum(1 for _ in f)
    print(f"{path}: {n_rows} rows valid")
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m results.validate",
        description="Check raplbench JSON Lines result files against results/schema.json.")
    parser.add_argument("files", nargs="+", metavar="FILE")
    args = parser.parse_args(argv)
    results = [check(path) for path in args.files]  # check every file, not just up to the first bad one
    return 0 if all(results) else 2


if __name__ == "__main__":
    sys.exit(main())
