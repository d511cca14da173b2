"""The gate's layers (issue 31): ci/ imports nothing from plots/ (the report
sits above the gate, not below it), and no two modules of ci/ import each
other, directly or round a longer cycle. Read from the sources with ast, so
an import inside a function or under TYPE_CHECKING counts too."""

import ast
from pathlib import Path

CI = Path(__file__).resolve().parent


def imports(path: Path) -> set[str]:
    """The modules a file imports, as dotted names ("ci.gate_stats", "plots.labels")."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}  # from ci import gate
    return found


def modules() -> dict[str, set[str]]:
    """ci module -> the ci modules it imports (tests left out: nothing imports them)."""
    names = {p.stem for p in CI.glob("*.py") if not p.stem.startswith(("test_", "conftest"))}
    return {name: {m.removeprefix("ci.") for m in imports(CI / f"{name}.py")
                   if m.removeprefix("ci.") in names - {name}} for name in names}


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of the graph, as the modules round it, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = "done"
        stack.pop()
        return None

    return next((c for n in sorted(graph) if n not in state and (c := visit(n))), None)


def test_ci_imports_nothing_from_plots():
    offenders = {p.name: sorted(m for m in imports(p) if m.split(".")[0] == "plots")
                 for p in sorted(CI.glob("*.py"))}
    assert {name: ms for name, ms in offenders.items() if ms} == {}


def test_the_ci_modules_have_no_import_cycle():
    graph = modules()
    assert {"gate", "gate_report", "gate_stats", "gate_config"} <= set(graph)
    assert graph["gate"] >= {"gate_report", "gate_stats"}  # the graph is read, not empty
    assert cycle(graph) is None


def test_cycle_finds_one():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None
