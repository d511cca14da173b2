"""The table model (plots/tables.py) rendered as LaTeX that fits a page as it is.

Every table is a `table*` float (in a two-column paper it spans both columns;
in one column it is an ordinary table) of the full text width. Whether it
needs wrapping is decided here from the cells' estimated widths, so the table
builders need not know about LaTeX:

- a table whose cells fit side by side is a plain booktabs `tabular`, long
  headers stacked on two or more lines;
- otherwise the columns that gain most from wrapping (long text such as a
  note, target, quantity or source, and long "median (CI)" cells) become
  tabularx X columns, ragged on their own side, their widths in proportion to
  what they hold; a smaller font and tighter column gaps come next;
- a table taller than a page is split into several floats, the later ones
  captioned "(continued)" with the same number: `longtable` would break it
  across pages by itself, but it does not work in two-column mode.

The widths are estimates from Computer Modern's metrics (the default font of
article); TeX itself does the final line breaking, so an estimate off by a
few points never overflows the text width, it only wraps a column a line
more or less. plots/test_latex.py compiles every table of fixture reports in a
one-column and a two-column article and fails on any overfull box.
"""

import dataclasses
import math
import re
import unicodedata

from plots.tables import MARK, Table

# article's text block on letter paper with \usepackage[margin=1in]{geometry}
TEXT_WIDTH_PT = 469.75   # 8.5in - 2in
TEXT_HEIGHT_PT = 650.43  # 11in - 2in
COMFORT_EM = 10.0        # a wrapped column this wide where the table allows
HEADER_LINES = 3         # a header stacked on no more lines than this
PAGE_SHARE = 0.85        # of the text height one float may fill (caption, rules and slack)

PREAMBLE = r"\usepackage{booktabs}\usepackage{tabularx}"


@dataclasses.dataclass(frozen=True)
class Size:
    command: str        # LaTeX size command
    em_pt: float        # one em of _EM_WIDTHS in points at this size
    baseline_pt: float  # \baselineskip at this size (article, 10pt)
    tabcolsep_pt: float


# \footnotesize is cmr8 at 8pt; \scriptsize is cmr7 at 7pt, whose glyphs are
# 1.07 times wider per em than cmr8's (their TFM files), so 7.5pt of cmr8 ems
# last resort before wrapping inside words: column gaps of 2pt
SIZES = (Size("footnotesize", 8.0, 9.5, 4.0), Size("scriptsize", 7.5, 8.0, 3.0),
         Size("scriptsize", 7.5, 8.0, 2.0))
# \caption sets its text in \normalsize whatever the float's size (cmr10's
# glyphs are 0.94 times as wide per em as cmr8's)
CAPTION_SIZE = Size("normalsize", 9.4, 12.0, 6.0)

# glyph widths in ems of cmr8 (tftopl cmr8.tfm), rounded up and grouped
_EM_WIDTHS = {}
for _chars, _em in (("ijl.,:;'!`|", 0.30), (" -", 0.36), ("frst()[]I", 0.42),
                    ("cez?\"", 0.48), ("0123456789agov/+*<>=^_~#$&", 0.54),
                    ("bdhnpquvkxyJS", 0.60), ("wFLPTZE", 0.78), ("mM%@W", 1.00),
                    ("–µμ", 0.55), ("×≥≤≈±·÷°½", 0.80), ("—→←…", 1.00)):
    for _ch in _chars:
        _EM_WIDTHS[_ch] = _em
_UPPER_EM = 0.82
_SPACE_EM = 0.36
_OTHER_EM = 1.00


# ---- escaping ---------------------------------------------------------------------------

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "#": r"\#", "$": r"\$",
    "%": r"\%", "&": r"\&", "_": r"\_", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    # the default OT1 font encoding prints "<", ">" and "|" as "¡", "¿" and "—"
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
}
_LATEX_UNICODE = {
    "—": "---", "–": "--", "→": r"$\to$", "←": r"$\leftarrow$", "µ": r"$\mu$", "μ": r"$\mu$",
    "×": r"$\times$", "≥": r"$\geq$", "≤": r"$\leq$", "≈": r"$\approx$", "±": r"$\pm$",
    "…": r"\ldots{}", "·": r"$\cdot$", "‘": "`", "’": "'", "“": "``", "”": "''", "½": r"$\frac12$",
    "÷": r"$\div$", "°": r"$^\circ$", "−": r"$-$", "δ": r"$\delta$", "Φ": r"$\Phi$",
    "²": r"$^2$", "√": r"$\surd$", "≠": r"$\neq$",
}


_SPELLED = {**_LATEX_SPECIAL, **_LATEX_UNICODE}


def _ascii_base(ch: str) -> str:
    return unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode()


def dropped(text: str) -> set[str]:
    """The characters of `text` that latex_escape would drop: non-ASCII, not
    spelled in _LATEX_UNICODE and with no ASCII base (a U+2212 minus would
    lose a number's sign)."""
    return {ch for ch in text if ord(ch) >= 128 and ch not in _LATEX_UNICODE
            and not _ascii_base(ch)}


def latex_escape(text: str) -> str:
    """Text for a LaTeX document: the special characters escaped, the few
    non-ASCII characters of the report spelled in LaTeX; anything else
    non-ASCII reduced to its ASCII base or dropped, so the output is ASCII."""
    return "".join(_SPELLED[ch] if ch in _SPELLED else ch if ord(ch) < 128 else _ascii_base(ch)
                   for ch in text)


_BREAK_TEX = re.compile(r"/|(?<!-)--(?!-)|\$\\to\$")


def _breakable(tex: str) -> str:
    """Escaped text that may also break after a slash, a dash between two
    numbers or an arrow: paths and "a--b" ranges in a narrow column, a
    caption or a footnote would otherwise stick out of it."""
    # a small penalty: a break between words is better where there is one
    return _BREAK_TEX.sub(lambda m: m.group(0) + r"\penalty50{}", tex)


def _tex_cell(text: str) -> str:
    pieces = MARK.split(text)  # text, marks' numbers, text, ..., text
    tex = "".join(latex_escape(before).rstrip() + rf"\textsuperscript{{{numbers}}}"
                  for before, numbers in zip(pieces[::2], pieces[1::2])) \
        + latex_escape(pieces[-1])
    # digit groups ("1 358 057") stay on one line
    tex = _DIGIT_GROUPS.sub("~", tex.replace("\n", " "))
    # a cell after \\ must not start with "[": \\ would take it for its argument
    return "{}" + tex if tex.startswith("[") else tex


# ---- width estimates --------------------------------------------------------------------

def text_em(text: str) -> float:
    """The estimated width of a cell in ems, a footnote mark as a superscript."""
    marks = sum(len(m.group(1)) for m in MARK.finditer(text)) * 0.6
    plain = MARK.sub("", text).rstrip()
    return marks + sum(_EM_WIDTHS.get(ch, _UPPER_EM if ch.isupper() else
                                      0.55 if ord(ch) < 128 else _OTHER_EM) for ch in plain)


_BREAK_AFTER = re.compile(r"(?<=[/–→])")
_WORD_BREAK = re.compile(r"\s+(?!\d)|(?<!\d)\s+")  # not in "1 358 057"
_DIGIT_GROUPS = re.compile(r"(?<=\d) (?=\d)")


def _tokens(text: str, inside_words: bool = True) -> list[str]:
    """The pieces a wrapping cell can break into: words, and (inside_words)
    parts of a word after a slash, a dash or an arrow, where _breakable lets
    TeX break."""
    words = _WORD_BREAK.split(MARK.sub("", text).strip())
    if not inside_words:
        return words
    return [piece for word in words for piece in _BREAK_AFTER.split(word) if piece]


def _longest_token_em(text: str, inside_words: bool = True) -> float:
    return max((text_em(t) for t in _tokens(text, inside_words)), default=0.0) + (
        0.6 if MARK.search(text) else 0.0)


@dataclasses.dataclass
class Layout:
    size: Size
    widths_pt: list[float]     # per column: natural width, or the share of an X column
    wrap: list[bool]           # per column: an X column
    header_lines: list[list[str]]  # a fixed column's header stacked on these lines
    plain: bool                # everything fits side by side: a plain tabular
    inside_words: bool = False  # wrapped cells break inside words too (paths, ranges)


def _stack(header: str, width_em: float) -> list[str]:
    """A header on lines no wider than width_em (a piece wider than it alone),
    broken at spaces and where _tokens breaks."""
    lines: list[str] = []
    for word in header.split():
        for k, piece in enumerate(p for p in _BREAK_AFTER.split(word) if p):
            joined = (lines[-1] + (" " if k == 0 else "") + piece) if lines else piece
            if lines and text_em(joined) <= width_em:
                lines[-1] = joined
            else:
                lines.append(piece)
    return lines or [""]


def _wrapped(t: Table, size: Size, fixed_em: list[float], want_em: list[float],
             min_em: list[float], text_width_pt: float, inside_words: bool) -> Layout | None:
    """Wrap the columns that save most until the rest, and the wrapped
    columns at want_em, fit."""
    n = len(t.columns)
    avail = text_width_pt - 2 * size.tabcolsep_pt * n
    order = sorted((i for i in range(n) if fixed_em[i] > min_em[i]),
                   key=lambda i: fixed_em[i] - min_em[i], reverse=True)
    wrap = [False] * n
    for i in order:
        wrap[i] = True
        fixed = sum(f for f, w in zip(fixed_em, wrap) if not w) * size.em_pt
        if fixed + sum(m for m, w in zip(want_em, wrap) if w) * size.em_pt > avail:
            continue
        # the wrapped columns' widths: each its longest piece, and the room
        # left in proportion to what wrapping took from it
        room = (avail - fixed) - sum(m for m, w in zip(min_em, wrap) if w) * size.em_pt
        gain = sum(f - m for f, m, w in zip(fixed_em, min_em, wrap) if w)
        widths = [(m * size.em_pt + room * (f - m) / gain) if w else f * size.em_pt
                  for f, m, w in zip(fixed_em, min_em, wrap)]
        return Layout(size, widths, wrap, [_stack(c, f) for c, f in zip(t.columns, fixed_em)],
                      plain=False, inside_words=inside_words)
    return None


def layout(t: Table, text_width_pt: float = TEXT_WIDTH_PT) -> Layout | None:
    """How the table fits text_width_pt: the first size at which it does, or None."""
    n = len(t.columns)
    body_em = [max((text_em(row[i]) for row in t.body), default=0.0) for i in range(n)]
    head_em = [text_em(c) for c in t.columns]
    head_token_em = [max((text_em(w) for w in _tokens(c)), default=0.0) for c in t.columns]
    # a fixed column's header stacked on at most HEADER_LINES lines
    fixed_em = [max(b, t, h / HEADER_LINES) for b, t, h in zip(body_em, head_token_em, head_em)]
    for size in SIZES:
        avail = text_width_pt - 2 * size.tabcolsep_pt * n
        if sum(max(b, h) for b, h in zip(body_em, head_em)) * size.em_pt <= avail:
            return Layout(size, [max(b, h) * size.em_pt for b, h in zip(body_em, head_em)],
                          [False] * n, [[c] for c in t.columns], plain=True)
        if sum(fixed_em) * size.em_pt <= avail:
            return Layout(size, [f * size.em_pt for f in fixed_em], [False] * n,
                          [_stack(c, f) for c, f in zip(t.columns, fixed_em)], plain=True)
    # wrapped columns COMFORTABLY wide if the table allows (else a note ends
    # up a word a line beside a long path), as wide as their longest piece if
    # not; cells broken between words if that is enough, inside them (after
    # a slash, "0.125--" "0.134 ns") if not
    for comfortable in (True, False):
        for inside_words in (False, True):
            token_em = [max((_longest_token_em(row[i], inside_words) for row in t.body),
                            default=0.0) for i in range(n)]
            min_em = [max(b, h) for b, h in zip(token_em, head_token_em)]
            want_em = [min(f, max(m, COMFORT_EM)) if comfortable else m
                       for f, m in zip(fixed_em, min_em)]
            for size in SIZES:
                lay = _wrapped(t, size, fixed_em, want_em, min_em, text_width_pt, inside_words)
                if lay:
                    return lay
    return None


# ---- rendering --------------------------------------------------------------------------

def _align_x(a: str, share: float) -> str:
    ragged = r"\raggedleft" if a == "r" else r"\raggedright"
    return rf">{{{ragged}\arraybackslash\hsize={share:.3f}\hsize\linewidth=\hsize}}X"


def column_spec(t: Table, lay: Layout) -> str:
    """The tabular(x) column spec: l/r for fixed columns, X columns with
    their share of the wrapped width (the shares add up to their number, as
    tabularx requires)."""
    x_widths = [w for w, x in zip(lay.widths_pt, lay.wrap) if x]
    mean = sum(x_widths) / len(x_widths) if x_widths else 1.0
    return "".join(_align_x(a, w / mean) if x else a
                   for a, w, x in zip(t.align, lay.widths_pt, lay.wrap))


def _header_cell(lines: list[str], align: str, wrapped: bool) -> str:
    if wrapped or len(lines) == 1:
        return _breakable(_tex_cell(" ".join(lines)))
    return (rf"\begin{{tabular}}[b]{{@{{}}{align}@{{}}}}"
            + r"\\".join(_tex_cell(line) for line in lines) + r"\end{tabular}")


def _wrapped_lines(text: str, width_pt: float, size: Size, inside_words: bool) -> int:
    """The lines a ragged cell of width_pt takes: its pieces filled in greedily."""
    lines, used = 1, 0.0
    for piece in _tokens(text, inside_words):
        w = text_em(piece) * size.em_pt
        if used and used + _SPACE_EM * size.em_pt + w > width_pt:
            lines, used = lines + 1, w
        else:
            used += (_SPACE_EM * size.em_pt if used else 0.0) + w
    return lines


def _text_height_pt(text: str, size: Size, width_pt: float = TEXT_WIDTH_PT) -> float:
    return math.ceil(1.05 * text_em(text) * size.em_pt / width_pt) * size.baseline_pt


def _row_height_pt(row: list[str], lay: Layout) -> float:
    """A row as tall as its wrapped cell of most lines."""
    lines = max([1] + [_wrapped_lines(cell, w, lay.size, lay.inside_words)
                       for cell, w, x in zip(row, lay.widths_pt, lay.wrap) if x and cell])
    return lines * lay.size.baseline_pt + 1


def float_heights_pt(t: Table, lay: Layout) -> tuple[float, float, float]:
    """Estimated heights of a float's caption, header and footnotes."""
    header_lines = max([len(lines) for lines, x in zip(lay.header_lines, lay.wrap) if not x]
                       + [_wrapped_lines(c, w, lay.size, True)
                          for c, w, x in zip(t.columns, lay.widths_pt, lay.wrap) if x])
    header_pt = (header_lines + 1) * lay.size.baseline_pt
    caption_pt = _text_height_pt(f"Table 00: {t.title}. {t.caption}", CAPTION_SIZE) + 10
    notes_size = SIZES[-1]
    notes_pt = sum(_text_height_pt(f"00 {text}", notes_size) for text in t.footnotes) + 6
    return caption_pt, header_pt, notes_pt


def _split(t: Table, lay: Layout, budget: float) -> list[list[list[str]]]:
    caption_pt, header_pt, notes_pt = float_heights_pt(t, lay)
    continued_pt = CAPTION_SIZE.baseline_pt + 10
    pieces: list[list[list[str]]] = [[]]
    used = caption_pt + header_pt
    for row in t.body:
        height = _row_height_pt(row, lay)
        if pieces[-1] and used + height > budget:
            pieces.append([])
            used = continued_pt + header_pt
        pieces[-1].append(row)
        used += height
    # the footnotes go below the last piece: if they do not fit, its last rows
    # go on to one more piece
    moved: list[list[str]] = []
    while len(pieces[-1]) > 1 and used + notes_pt > budget:
        row = pieces[-1].pop()
        used -= _row_height_pt(row, lay)
        moved.insert(0, row)
    if moved:
        pieces.append(moved)
    return pieces


def chunks(t: Table, lay: Layout) -> list[list[list[str]]]:
    """The body in pieces that each fit a page with the caption (the first
    in full, the others one line), the header and (the last) the footnotes;
    as many pieces as needed, of about the same height."""
    budget = PAGE_SHARE * TEXT_HEIGHT_PT
    pieces = _split(t, lay, budget)
    if len(pieces) > 1:
        # the least height per float that still needs no more floats
        low, high = 0.0, budget
        for _ in range(20):
            middle = (low + high) / 2
            low, high = (low, middle) if len(_split(t, lay, middle)) <= len(pieces) else (middle, high)
        pieces = _split(t, lay, high)
    return pieces


HEADER = r"""% Generated by raplbench: python -m plots.report. Needs in the preamble:
%   \usepackage{booktabs}
%   \usepackage{tabularx}
% Each table is a table* float (it spans both columns of a two-column paper) of
% the text width; long cells wrap in tabularx X columns. A table taller than a
% page is split into floats of the same number, the later ones "(continued)":
% longtable would not work in two-column mode. Fits the text width of an
% article with 1-inch margins on letter paper (469.75pt), in one column or two.
% Values are medians with a distribution-free 95% confidence interval of the median.
"""


def _table(t: Table) -> list[str]:
    lay = layout(t)
    shrink = lay is None
    if shrink:  # not even the longest words fit: shrink it, saying so
        lay = Layout(SIZES[-1], [0.0] * len(t.columns), [False] * len(t.columns),
                     [[c] for c in t.columns], plain=True)
    spec = column_spec(t, lay)
    header = " & ".join(_header_cell(lines, a, x) for lines, a, x
                        in zip(lay.header_lines, t.align, lay.wrap)) + r" \\"
    pieces = chunks(t, lay)
    out = []
    for k, piece in enumerate(pieces):
        last = k == len(pieces) - 1
        out += [r"\begin{table*}[tbp]", r"\centering", rf"\{lay.size.command}",
                rf"\setlength\tabcolsep{{{lay.size.tabcolsep_pt:g}pt}}"]
        if k == 0:
            out += [rf"\caption{{{_breakable(latex_escape(t.title))}. "
                    rf"{_breakable(latex_escape(t.caption))}}}",
                    rf"\label{{tab:raplbench-{t.key}}}"]
        else:
            # not a \caption: it would count a new table and list it again
            out += [rf"{{\normalsize\tablename~\thetable: {_breakable(latex_escape(t.title))} "
                    r"(continued)\par}\medskip"]
        if shrink:  # no report table comes here (plots/test_latex.py)
            out += [r"% shrunk to the text width: needs \usepackage{graphicx}",
                    r"\resizebox{\linewidth}{!}{%"]
        if lay.plain:
            out.append(rf"\begin{{tabular}}{{{spec}}}")
        else:
            out.append(rf"\begin{{tabularx}}{{\linewidth}}{{{spec}}}")
        out += [r"\toprule", header, r"\midrule"]
        out += [" & ".join(_breakable(_tex_cell(c)) if x and lay.inside_words else _tex_cell(c)
                           for c, x in zip(row, lay.wrap)) + r" \\" for row in piece]
        out += [r"\bottomrule", r"\end{tabular}" if lay.plain else r"\end{tabularx}"]
        if shrink:
            out.append("}")
        if last and t.footnotes:
            out += [r"\par\smallskip", r"\begin{minipage}{\linewidth}\scriptsize\raggedright"]
            out += [rf"\textsuperscript{{{i}}}\,{_breakable(latex_escape(text))}\par"
                    for i, text in enumerate(t.footnotes, 1)]
            out.append(r"\end{minipage}")
        out += [r"\end{table*}", ""]
    return out


def to_latex(tables: list[Table]) -> str:
    out = [HEADER]
    for t in tables:
        out += _table(t)
    return "\n".join(out)
