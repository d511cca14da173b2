"""index.html in a real browser (headless Chromium, plots/browser.py), and
the page's pieces that need no browser (the machines list).

Two reports of fixture runs are opened from file://: the KVM guest whose
RAPL counter is frozen (stand-ins and frozen rows), and three machines (the
victim-side KVM guest, the frozen guest, and the frozen guest as if
emulated). In each: no console or page errors, every image decoded, every
table captioned with header cells and rows, every in-page anchor resolving,
alt text on every image, the coloured text of the style sheet (stand-in and
frozen marks, dash cells, footnote marks, ...) at WCAG 2 AA contrast, and a
full-page screenshot. Skipped, with the reason, where no browser can run.
"""

import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from plots import browser, htmlpage, labels, report
from plots.fixtures import KVM_FROZEN, KVM_VICTIM, emulated_copy
from plots.runs import Run, load_runs
from plots.tables import Table, to_html
from results import rows as rows_mod

AA_CONTRAST = 4.5  # WCAG 2, success criterion 1.4.3, normal-size text

# ---- contrast: WCAG 2 relative luminance ---------------------------------------------------


def parse_css_color(text: str) -> tuple[float, float, float, float]:
    """(r, g, b, alpha) of a computed colour: "rgb(1, 2, 3)", "rgba(1, 2, 3, 0.5)"."""
    m = re.fullmatch(r"rgba?\(([\d.]+)[ ,]+([\d.]+)[ ,]+([\d.]+)(?:[ ,/]+([\d.]+))?\)", text.strip())
    assert m, f"not an rgb() colour: {text!r}"
    r, g, b, a = m.groups()
    return float(r), float(g), float(b), float(a) if a is not None else 1.0


def hex_rgb(text: str) -> tuple[float, float, float]:
    text = text.lstrip("#")
    if len(text) == 3:
        text = "".join(c * 2 for c in text)
    return tuple(float(int(text[i:i + 2], 16)) for i in (0, 2, 4))


def over(top: tuple, below: tuple[float, float, float]) -> tuple[float, float, float]:
    """A colour with alpha composited over an opaque one."""
    *rgb, alpha = top
    return tuple(alpha * c + (1 - alpha) * b for c, b in zip(rgb, below))


def relative_luminance(rgb) -> float:
    def linear(channel):
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(fg, bg) -> float:
    lighter, darker = sorted((relative_luminance(fg), relative_luminance(bg)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def shown_background(backgrounds: list[str]) -> tuple[float, float, float]:
    """The opaque colour behind an element: its ancestors' backgrounds
    (element first, <html> last) composited over the white canvas."""
    bg = (255.0, 255.0, 255.0)
    for css in reversed(backgrounds):
        bg = over(parse_css_color(css), bg)
    return bg


def test_contrast_formula_on_known_pairs():
    white, black = hex_rgb("#fff"), hex_rgb("#000")
    assert contrast_ratio(black, white) == pytest.approx(21.0)
    assert contrast_ratio(white, black) == pytest.approx(21.0)
    assert contrast_ratio(hex_rgb("#777"), white) == pytest.approx(4.48, abs=0.005)
    assert contrast_ratio(hex_rgb("#767676"), white) >= AA_CONTRAST  # the lightest AA grey
    assert contrast_ratio(hex_rgb("#777"), white) < AA_CONTRAST
    # 50% black over white is rgb(127.5, ...): the text seen, not the declared colour
    assert over((0, 0, 0, 0.5), white) == (127.5, 127.5, 127.5)
    assert shown_background(["rgba(0, 0, 0, 0)", "rgb(0, 0, 0)"]) == black


def coloured_selectors() -> list[str]:
    """The selectors of htmlpage.STYLE that set a text colour."""
    out = []
    for selectors, declarations in re.findall(r"([^{}]+)\{([^}]*)\}", htmlpage.STYLE):
        if re.search(r"(^|;)\s*color\s*:", declarations):
            out += [s.strip() for s in selectors.split(",")]
    return out


def test_the_style_sheet_has_coloured_marks():
    selectors = coloured_selectors()
    for wanted in (".stand-in", ".frozen", "td.dash", "sup.mark"):
        assert wanted in selectors


# ---- the machines list (no browser) --------------------------------------------------------


def run_of(**machine) -> Run:
    base = {"hostname": "h", "cpu_vendor": "AuthenticAMD", "cpu_model_name": "AMD EPYC 7702",
            "kernel": "6.1", "hypervisor": None}
    row = {"machine": {**base, **machine}, "run_id": "r1", "timestamp": "2026-11-24T00:00:00Z"}
    return Run(path=Path("r1/results.jsonl"), rows=[row], label="AMD EPYC 7702")


@pytest.mark.parametrize("machine, shown", [
    ({"hypervisor": "kvm", "online_cpus": 2, "packages": 1}, "2 vCPUs"),
    ({"hypervisor": "kvm", "online_cpus": 1, "packages": None}, "1 vCPU"),
    ({"online_cpus": 64, "packages": 2}, "64 CPUs, 2 packages"),
    ({"online_cpus": 8, "packages": 1}, "8 CPUs, 1 package"),
    ({"online_cpus": 8, "packages": None}, "8 CPUs, packages not readable"),
    ({"online_cpus": None, "packages": None}, "CPU count not readable"),
    ({}, "CPU count not recorded (run predates it)"),
])
def test_cpu_count(machine, shown):
    assert labels.cpu_count(run_of(**machine).machine) == shown


def test_machines_list_shows_each_cpu_count():
    runs = [run_of(hypervisor="kvm", online_cpus=2, packages=1),
            run_of(online_cpus=64, packages=2), run_of()]
    page = htmlpage.machines_list(runs)
    cells = re.findall(r"<td class=\"nowrap\">([^<]*CPU[^<]*)</td>", page)
    assert cells == ["2 vCPUs", "64 CPUs, 2 packages", "CPU count not recorded (run predates it)"]
    assert "<caption>" in page and '<th scope="col">CPUs</th>' in page


def test_html_table_marks_and_header_scope():
    t = Table(name="t", key="t", title="T", caption="c", columns=["a", "note"], align="lr",
              body=[["x", "stand-in [^1]"], ["y", "frozen [^2]; unavailable [^3]"],
              ["z", "a stand-in taken"], ["1 321 121", "1.15 µs (1.04–1.2 µs) / 0.99 %"]],
              footnotes=["s", "f", "u"], csv_columns=[], records=[])
    page = to_html(t)
    assert '<th style="text-align:left" scope="col">a</th>' in page
    assert '<span class="stand-in">stand-in</span> <sup class="mark">[1]</sup>' in page
    assert '<span class="frozen">frozen</span> <sup class="mark">[2]</sup>' in page
    assert 'unavailable <sup class="mark">[3]</sup>' in page
    assert "a stand-in taken" in page  # a word without a footnote is text, not a mark
    # a narrow column breaks between numbers, never inside one
    assert "1&nbsp;321&nbsp;121" in page
    assert "1.15&nbsp;µs (1.04–1.2&nbsp;µs) / 0.99&nbsp;%" in page


# ---- why no browser can run ---------------------------------------------------------------


def unavailable_reason() -> str:
    with pytest.raises(browser.Unavailable) as caught:
        with browser.chromium():
            pass
    return str(caught.value)


def test_reason_without_playwright(monkeypatch):
    monkeypatch.setitem(sys.modules, "playwright.sync_api", None)  # import fails
    assert unavailable_reason().startswith("playwright is not importable")


def test_reason_without_chromium(monkeypatch, tmp_path):
    pytest.importorskip("playwright.sync_api")
    monkeypatch.setattr(browser, "DEBIAN_CHROMIUM", tmp_path / "chromium")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert browser.chromium_path() is None
    assert "install Debian's chromium, or run make deps-test as root" in unavailable_reason()


def test_reason_when_the_browser_does_not_start(monkeypatch, tmp_path):
    pytest.importorskip("playwright.sync_api")
    broken = tmp_path / "chromium"
    broken.write_text(  # Chromium's D-Bus noise first, as on every start without a session bus
        "#!/bin/sh\necho '[1:2:1124/090937.233056:ERROR:dbus/bus.cc:405] Failed to connect "
        "to the bus' >&2\necho 'chromium: error while loading shared libraries: libnss3.so' "
        ">&2\nexit 127\n")
    broken.chmod(0o755)
    monkeypatch.setattr(browser, "DEBIAN_CHROMIUM", broken)
    assert unavailable_reason() == (f"{broken} did not start: chromium: error while loading "
                                    "shared libraries: libnss3.so")


# ---- the page in Chromium -----------------------------------------------------------------

FACTS = """(selectors) => {
  const text = el => (el ? el.textContent : '').trim();
  const backgrounds = el => {
    const out = [];
    for (let e = el; e; e = e.parentElement) out.push(getComputedStyle(e).backgroundColor);
    return out;
  };
  const coloured = [];
  for (const selector of selectors) {
    const seen = new Set();
    for (const el of document.querySelectorAll(selector)) {
      if (!text(el)) continue;
      const color = getComputedStyle(el).color, bgs = backgrounds(el);
      const key = color + bgs.join();
      if (seen.has(key)) continue;
      seen.add(key);
      coloured.push({selector, color, backgrounds: bgs, text: text(el).slice(0, 60)});
    }
  }
  const ids = [...document.querySelectorAll('[id]')].map(e => e.id);
  return {
    lang: document.documentElement.lang,
    title: document.title,
    ids,
    images: [...document.images].map(i => ({
      alt: i.getAttribute('alt'), complete: i.complete, width: i.naturalWidth,
      shown_width: i.getBoundingClientRect().width, in_figure: !!i.closest('figure')})),
    figures: [...document.querySelectorAll('figure')].map(f => ({
      images: f.querySelectorAll('img').length, caption: text(f.querySelector('figcaption'))})),
    tables: [...document.querySelectorAll('table')].map(t => ({
      id: t.id || text(t.caption).slice(0, 40),
      caption: text(t.caption),
      header_scopes: [...t.querySelectorAll('thead th')].map(th => th.getAttribute('scope')),
      header_tds: t.querySelectorAll('thead td').length,
      rows: [...t.querySelectorAll('tbody tr')].map(tr => tr.cells.length)})),
    anchors: [...document.querySelectorAll('a[href^="#"]')].map(a => ({
      href: a.getAttribute('href'), text: text(a),
      resolves: !!document.getElementById(decodeURIComponent(a.getAttribute('href').slice(1)))})),
    coloured,
    page_width: document.documentElement.scrollWidth,
    viewport_width: window.innerWidth,
  };
}"""


def three_runs(tmp: Path) -> list[Run]:
    emulated = tmp / "kvm-frozen-emulated.jsonl"
    rows_mod.write_jsonl(emulated_copy(load_runs([KVM_FROZEN])[0].rows), emulated)
    return load_runs([KVM_VICTIM, KVM_FROZEN, emulated])


def three_runs_report(tmp: Path, refs) -> Path:
    out = tmp / "report"
    report.build(three_runs(tmp), refs, out)
    return out


# the report to open, from the test's directory, the reference rows and the
# session's shared reports (conftest.report_of)
REPORTS = {
    "kvm-frozen": lambda tmp, refs, report_of: report_of(KVM_FROZEN)[0],  # shared with test_latex
    "three-runs": lambda tmp, refs, report_of: three_runs_report(tmp, refs),
}


@pytest.fixture(scope="module")
def chromium():
    try:
        with browser.chromium() as b:
            yield b
    except browser.Unavailable as e:
        pytest.skip(f"no browser to open index.html: {e}")


@pytest.fixture(scope="module", params=list(REPORTS))
def shown(request, chromium, tmp_path_factory, refs, report_of):
    """The report built, opened in Chromium: what the page says about itself."""
    tmp = tmp_path_factory.mktemp(request.param)
    out = REPORTS[request.param](tmp, refs, report_of)
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}")
            if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url[:80]}"))
    page.goto((out / "index.html").as_uri(), wait_until="load")
    facts = page.evaluate(FACTS, coloured_selectors())
    screenshot = tmp / "index.png"
    page.screenshot(path=screenshot, full_page=True)
    page.close()
    return {"name": request.param, "errors": errors, "screenshot": screenshot, **facts}


def test_no_console_or_page_errors(shown):
    assert shown["errors"] == []


def test_every_image_loads_and_has_alt_text(shown):
    assert shown["images"], "no figure on the page"
    for img in shown["images"]:
        assert img["complete"] and img["width"] > 0, img
        assert (img["alt"] or "").strip(), img
        assert img["in_figure"]
        assert 0 < img["shown_width"] <= shown["viewport_width"], img
    for fig in shown["figures"]:
        assert fig["images"] == 1 and fig["caption"], fig


def test_every_table_has_caption_header_cells_and_rows(shown):
    assert len(shown["tables"]) >= 3
    for t in shown["tables"]:
        assert t["caption"], t["id"]
        assert t["header_scopes"] and t["header_tds"] == 0, t["id"]
        assert set(t["header_scopes"]) <= {"col", "row"} and None not in t["header_scopes"], t["id"]
        assert t["rows"], f"{t['id']}: no body row"
        assert set(t["rows"]) == {len(t["header_scopes"])}, f"{t['id']}: ragged rows {t['rows']}"


def test_anchors_resolve_and_ids_are_unique(shown):
    assert len(shown["anchors"]) >= 3, "no navigation"
    assert [a for a in shown["anchors"] if not a["resolves"]] == []
    assert [i for i, n in Counter(shown["ids"]).items() if n > 1] == []


def test_page_language_title_and_width(shown):
    assert shown["lang"] == "en" and shown["title"].startswith("raplbench report")
    assert shown["page_width"] <= shown["viewport_width"], "the page scrolls sideways"


def test_coloured_text_contrast(shown):
    found = {c["selector"] for c in shown["coloured"]}
    assert {".stand-in", ".frozen", "td.dash", "sup.mark"} <= found, found
    if shown["name"] == "three-runs":  # an emulated machine too: every coloured rule shows
        assert found == set(coloured_selectors())
    low = []
    for c in shown["coloured"]:
        background = shown_background(c["backgrounds"])
        ratio = contrast_ratio(over(parse_css_color(c["color"]), background), background)
        if ratio < AA_CONTRAST:
            low.append(f"{c['selector']} {c['color']} on rgb{background}: {ratio:.2f}:1 "
                       f"({c['text']!r})")
    assert low == []


def test_full_page_screenshot(shown):
    data = shown["screenshot"].read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
