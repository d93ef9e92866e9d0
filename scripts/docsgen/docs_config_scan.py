"""Which MEMHUB_* variables memhub reads, and which settings-dataclass field each one sets, found in the source.

Three things tie a variable to a field, all read from the code rather than kept by hand:
- the field's docstring names it ("Interface to listen on (MEMHUB_HOST)");
- a constructor call of the dataclass passes it to the field (``ServerConfig(port=env_int(env, "MEMHUB_PORT", ...))``);
- the field's default is the variable's name (``api_key_env = "MEMHUB_EMBEDDING_API_KEY"``: the secret's variable).
``env_int``/``env_float`` calls also give the accepted range.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "memhub"
VARIABLE = re.compile(r"MEMHUB_[A-Z0-9_]*[A-Z0-9]")
_EXACT = re.compile(rf"^{VARIABLE.pattern}$")


@dataclass
class FieldSource:
    module: str
    """memhub.config"""
    cls: str
    name: str
    docstring: str
    variables: set[str] = field(default_factory=set)


@dataclass
class Scan:
    read: dict[str, set[str]]
    """Every variable the package names as a whole string literal, with the files that do."""
    fields: dict[tuple[str, str, str], FieldSource]
    """(module, class, field) of every dataclass field in memhub/, with its docstring and variables."""
    ranges: dict[str, str]
    """Variable -> "low to high", from env_int/env_float calls with constant bounds."""
    class_order: list[tuple[str, str]] = field(default_factory=list)
    """(module, class) of every dataclass, in file and source order."""

    def documented(self) -> set[str]:
        return {v for f in self.fields.values() for v in f.variables}


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def _sources() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if "v1" not in path.relative_to(PACKAGE).parts[:1]:  # generated stubs name no variables
            yield path, ast.parse(path.read_text(), str(path))


def _is_dataclass(node: ast.ClassDef) -> bool:
    return any("dataclass" in ast.unparse(d) for d in node.decorator_list)


def _names_in(node: ast.AST) -> set[str]:
    return {c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str) and _EXACT.match(c.value)}


def _constant(node: ast.expr) -> float | int | None:
    """A bound written as a number or arithmetic on numbers (64 * 1024), else None."""
    if not all(isinstance(n, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop)) for n in ast.walk(node)):
        return None
    try:
        value = eval(compile(ast.Expression(node), "<bound>", "eval"), {"__builtins__": {}})  # numbers only, checked above
    except Exception:
        return None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _show(value: float | int) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:g}"
    return f"{int(value):,}"


@functools.cache
def scan() -> Scan:
    read: dict[str, set[str]] = {}
    fields: dict[tuple[str, str, str], FieldSource] = {}
    ranges: dict[str, str] = {}
    order: list[tuple[str, str]] = []
    classes: dict[str, str] = {}  # class name -> module (dataclass names are unique in memhub)
    trees = list(_sources())
    for path, tree in trees:
        module = _module_name(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _EXACT.match(node.value):
                read.setdefault(node.value, set()).add(str(path.relative_to(REPO)))
            if isinstance(node, ast.ClassDef) and _is_dataclass(node):
                classes[node.name] = module
                order.append((module, node.name))
                body = node.body
                for i, stmt in enumerate(body):
                    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                        doc = ""
                        if i + 1 < len(body) and isinstance(body[i + 1], ast.Expr):
                            value = body[i + 1].value  # type: ignore[attr-defined]
                            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                                doc = value.value
                        source = FieldSource(module, node.name, stmt.target.id, doc, set(VARIABLE.findall(doc)))
                        if isinstance(stmt.value, ast.Constant):  # a default that is a variable's name
                            source.variables |= _names_in(stmt.value)
                        fields[(module, node.name, stmt.target.id)] = source
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("env_int", "env_float") and len(node.args) >= 5:
                names = _names_in(node.args[1])
                low, high = _constant(node.args[3]), _constant(node.args[4])
                if len(names) == 1 and low is not None and high is not None:
                    ranges[names.pop()] = f"{_show(low)} to {_show(high)}"
    for _path, tree in trees:
        for cls_node in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
            _map_calls(cls_node, cls_node.name, classes, fields)
        _map_calls(tree, None, classes, fields)
    # Docstrings name variables in passing too ("MEMHUB_SESSION*"): keep only names the code reads.
    for source in fields.values():
        source.variables &= set(read)
    return Scan(read, fields, ranges, order)


FieldKey = tuple[str, str, str]


def _map_calls(root: ast.AST, own_class: str | None, classes: dict[str, str], fields: dict[FieldKey, FieldSource]) -> None:
    """Keyword arguments of dataclass constructor calls (``cls(...)`` inside the class itself) that read variables."""
    for node in ast.walk(root):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        name = own_class if node.func.id == "cls" and own_class else node.func.id
        if name not in classes:
            continue
        for keyword in node.keywords:
            key = (classes[name], name, keyword.arg or "")
            if key in fields:
                fields[key].variables |= _names_in(keyword.value)
