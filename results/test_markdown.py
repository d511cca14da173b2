from results import markdown


def test_a_pipe_or_a_line_break_in_a_cell_never_splits_its_row():
    lines = markdown.table(["mechanism", "summary"], [["perf", "|interval − period| 3 µs\nok"]],
                           align="lr")
    assert lines == ["| mechanism | summary |", "|---|---:|",
                     "| perf | \\|interval − period\\| 3 µs ok |"]
    # a Markdown reader sees two cells: split on pipes not escaped
    import re
    assert len(re.split(r"(?<!\\)\|", lines[2])) - 2 == 2
