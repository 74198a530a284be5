"""The tree as the next maintainer meets it, in numbers: the figures issue 43 asked for, measured the same way on
any checkout.

    .venv/bin/python scripts/architecture.py [CHECKOUT]

Prints: the folders with the most modules, name-prefix clusters (4 or more modules of one folder sharing the part
of their name before the first underscore), the import-linter `ignore_imports`, modules over 600 lines,
main_window.py's lines, the largest constructor among the window's features, event fields typed as a bare `dict`,
reads of a string key in workbench/ui (`x["key"]`, `x.get("key")`), and imports of one test module by another.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections import Counter, defaultdict
from pathlib import Path


def modules(root: Path) -> list[Path]:
    return sorted(p for p in (root / "workbench").rglob("*.py") if "__pycache__" not in p.parts)


def folder_counts(root: Path) -> list[tuple[str, int]]:
    counts = Counter(str(p.parent.relative_to(root)) for p in modules(root) if p.name != "__init__.py")
    return counts.most_common(8)


def prefix_clusters(root: Path) -> list[str]:
    found = []
    by_folder = defaultdict(list)
    for p in modules(root):
        if p.name != "__init__.py":
            by_folder[p.parent].append(p.stem)
    for folder, names in sorted(by_folder.items()):
        prefixes = Counter(name.split("_")[0] for name in names if "_" in name)
        for prefix, n in prefixes.items():
            if n >= 4:
                found.append(f"{folder.relative_to(root)}/{prefix}_* ({n})")
    return found


def ignore_imports(root: Path) -> int:
    config = tomllib.loads((root / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    return sum(len(contract.get("ignore_imports", [])) for contract in contracts)


def long_files(root: Path, limit: int = 600) -> list[str]:
    return [f"{p.relative_to(root)} ({n})" for p in modules(root)
            if (n := len(p.read_text().splitlines())) > limit]


def largest_feature_constructor(root: Path) -> tuple[str, int]:
    """The class in the window's feature controllers whose __init__ takes the most parameters (self aside)."""
    folder = root / "workbench" / "ui" / "features"
    files = sorted(folder.glob("*.py")) if folder.is_dir() else [
        root / "workbench" / "ui" / f"{name}.py" for name in (
            "training", "search", "compile_insight", "hosts", "checkpoints", "exports", "data_insight",
            "recorded_runs", "alerts", "kernel", "run_control")]
    best = ("", 0)
    for path in files:
        if not path.is_file():
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                        a = item.args
                        count = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) - 1
                        if count > best[1]:
                            best = (f"{path.relative_to(root)}:{node.name}", count)
    return best


def dict_event_fields(root: Path) -> list[str]:
    """Fields of the event classes annotated `dict` (bare, or dict[str, Any])."""
    path = root / "workbench" / "core" / "ground" / "events.py"
    found = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    text = ast.unparse(item.annotation)
                    if text == "dict" or text.startswith("dict[str, Any]"):
                        found.append(f"{node.name}.{item.target.id}")
    return found


# What a string-key read in workbench/ui reads, told by the expression it reads from (first match wins).
KEY_READ_KINDS = (
    ("the window's own maps (widgets, docks, menus, actions, colours)",
     re.compile(r"(^|\.)(fields|docks|menus|named_actions|actions|values|[A-Z_]*COLOURS)$")),
    ("a history row's stored settings (RunRecord.config)", re.compile(r"\.config$")),
    ("maps keyed by data (compile phases, memory readings)", re.compile(r"(^phases|\.memory)$")),
)
BENCH_REPORT = "the GUI benchmark's own JSON report (ui/bench_gui.py)"
PAYLOAD = "event payloads and job answers"


def string_key_reads(root: Path) -> Counter:
    """`x["key"]` and `x.get("key")` in workbench/ui — data read by name rather than as a typed field — by what they
    read (KEY_READ_KINDS; a read that is none of those counts as an event payload's or an answer's)."""
    kinds: Counter = Counter()
    for path in (root / "workbench" / "ui").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(
                    node.slice.value, str) and isinstance(node.ctx, ast.Load):
                base = node.value
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                  and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                base = node.func.value
            else:
                continue
            text = ast.unparse(base)
            kind = BENCH_REPORT if path.name == "bench_gui.py" else next(
                (name for name, pattern in KEY_READ_KINDS if pattern.search(text)), PAYLOAD)
            kinds[kind] += 1
    return kinds


def test_imports(root: Path) -> list[str]:
    """Imports of a test module (test_*.py) by another module under tests/."""
    found = []
    for path in sorted((root / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                last = node.module.rsplit(".", 1)[-1]
                if last.startswith("test_") or any(alias.name.startswith("test_") for alias in node.names):
                    found.append(f"{path.relative_to(root)} ← {'.' * node.level}{node.module}")
    return found


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]).resolve()
    print(f"{root}")
    print("largest folders (modules):", ", ".join(f"{folder} {n}" for folder, n in folder_counts(root)))
    print("name-prefix clusters of 4 or more:", ", ".join(prefix_clusters(root)) or "none")
    print("ignore_imports in the import contracts:", ignore_imports(root))
    print("modules over 600 lines:", ", ".join(long_files(root)) or "none")
    window = next((p for p in modules(root) if p.name == "main_window.py"), None)
    print("main_window.py lines:", len(window.read_text().splitlines()) if window else "-")
    where, count = largest_feature_constructor(root)
    print(f"largest feature constructor: {where} ({count} parameters)")
    fields = dict_event_fields(root)
    print(f"event fields typed dict: {len(fields)}" + (f" ({', '.join(fields)})" if fields else ""))
    reads = string_key_reads(root)
    print(f"string-key reads in workbench/ui: {sum(reads.values())}, of which {PAYLOAD}: {reads[PAYLOAD]}")
    for kind, n in reads.most_common():
        print(f"    {n:4d}  {kind}")
    imports = test_imports(root)
    print(f"test modules imported by tests: {len(imports)}")
    for line in imports:
        print("   ", line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
