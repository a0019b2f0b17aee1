"""The package's layers, read from the source: each folder imports only the layers its
docstring names, lower layers never import higher ones, and no two modules need each other
(not even through an import inside a function)."""

from __future__ import annotations

import ast
import re
from functools import cache
from importlib.util import resolve_name
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "codeact"
# The standard tools, written as any user writes tools: on codeact's public names only.
TOOLS = PACKAGE.parent / "stdlib_bindings"

# Lowest first: a layer may import only layers before it (its docstring says which).
LAYERS = (
    "contract",
    "sandbox",
    "stdlib",
    "executors",
    "session",
    "durable",
    "code_mode",
    "runtime",
    "providers",
    "agent",
    "mcp",
    "comparison",
    "bridges",
    "cli",
)
BASE = {"codeact._version"}  # imports nothing of codeact; anything may import it
ENTRY = {"codeact", "codeact.__main__", "codeact.demo", "codeact.plots", "codeact.suite"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def imports_of(module: str, *, at_import_time: bool = False) -> set[str]:
    """The codeact modules ``module`` imports: everywhere in it, or (``at_import_time``)
    only the statements that run when it is imported (module level, outside
    ``if TYPE_CHECKING``)."""
    found = all_imports(modules()[module], module, at_import_time=at_import_time)
    return {name for name in found if name == "codeact" or name.startswith("codeact.")}


def all_imports(path: Path, module: str, *, at_import_time: bool = False) -> set[str]:
    """Every module name ``module`` (read from ``path``) imports, relative ones resolved."""
    tree = syntax(module) if module in modules() else ast.parse(path.read_text("utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    nodes = _top_level(tree.body) if at_import_time else ast.walk(tree)
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            base = resolve_name("." * node.level + (node.module or ""), package)
            for alias in node.names:  # ``from . import _dispatch`` names a module
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in modules() else base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@cache
def syntax(module: str) -> ast.Module:
    """A module's tree, parsed once for every check that reads it."""
    return ast.parse(modules()[module].read_text(encoding="utf-8"))


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    kept: list[ast.stmt] = []
    for statement in body:
        if isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test):
            continue
        if isinstance(statement, ast.If | ast.Try):
            kept += _top_level(statement.body) + _top_level(statement.orelse)
        else:
            kept.append(statement)
    return kept


def allowed_by_docstring(layer: str) -> set[str]:
    """The layers a folder's docstring says it may import ("May import: a, b",
    "contract to runtime", "every layer", or "Imports no other layer")."""
    docstring = ast.get_docstring(ast.parse((PACKAGE / layer / "__init__.py").read_text())) or ""
    text = " ".join(docstring.split())
    if "Imports no other layer" in text:
        return set()
    said = re.search(r"May import: ([^.]+)\.", text)
    assert said is not None, f"codeact/{layer}/__init__.py does not say what it may import"
    below = LAYERS[: LAYERS.index(layer)]
    if said.group(1) == "every layer":
        return set(below)
    ranged = re.fullmatch(r"(\w+) to (\w+)", said.group(1))
    if ranged:
        return set(LAYERS[LAYERS.index(ranged.group(1)) : LAYERS.index(ranged.group(2)) + 1])
    return {name.strip() for name in said.group(1).split(",")}


def test_every_module_lives_in_a_layer_or_is_an_entry_point() -> None:
    stray = {m for m in modules() if layer_of(m) is None and m not in BASE | ENTRY}
    assert not stray, f"modules outside every layer: {sorted(stray)}"
    assert {layer for layer in LAYERS if (PACKAGE / layer).is_dir()} == set(LAYERS)
    assert not any(imports_of(module) for module in BASE)  # the base imports nothing of ours


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_may_import_only_layers_below_it(layer: str) -> None:
    allowed = allowed_by_docstring(layer)
    assert allowed <= set(LAYERS[: LAYERS.index(layer)]), f"{layer} names a higher layer"


def wrong_imports(module: str, targets: set[str]) -> set[str]:
    """Which of ``targets`` a layered ``module`` may not import: a layer its folder's
    docstring does not name, or an entry point."""
    layer = layer_of(module)
    assert layer is not None
    allowed = allowed_by_docstring(layer) | {layer}
    return {target for target in targets if target not in BASE and layer_of(target) not in allowed}


def import_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of ``graph`` (module -> modules it imports), or [] when there is none."""
    done: set[str] = set()

    def walk(module: str, path: list[str]) -> list[str]:
        for target in sorted(graph.get(module, set()) - {module}):
            if target in path:
                return [*path[path.index(target) :], target]
            if target not in done:
                found = walk(target, [*path, target])
                if found:
                    return found
        done.add(module)
        return []

    for module in sorted(graph):
        found = [] if module in done else walk(module, [module])
        if found:
            return found
    return []


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_imports_only_what_its_docstring_allows(layer: str) -> None:
    wrong = {
        f"{module} imports {target}"
        for module in modules()
        if layer_of(module) == layer
        for target in wrong_imports(module, imports_of(module))
    }
    assert not wrong, sorted(wrong)


@pytest.mark.parametrize("at_import_time", [True, False], ids=["when-imported", "anywhere"])
def test_no_two_modules_need_each_other(at_import_time: bool) -> None:
    """Not when imported, and not through an import inside a function either: a lazy
    import that closes a cycle is the same tangle, deferred."""
    graph = {m: imports_of(m, at_import_time=at_import_time) & set(modules()) for m in modules()}
    cycle = import_cycle(graph)
    assert not cycle, " -> ".join(cycle)


def test_the_standard_tools_stand_on_the_public_api_and_only_the_cli_offers_them() -> None:
    """``stdlib_bindings`` imports ``codeact``'s public names and nothing under them;
    of codeact only the command line (``--tools``) imports it, so no layer reaches up."""
    reaching_in = {
        f"stdlib_bindings/{path.name} imports {name}"
        for path in sorted(TOOLS.glob("*.py"))
        for name in all_imports(path, f"stdlib_bindings.{path.stem}".removesuffix(".__init__"))
        if name.startswith("codeact.")
    }
    assert not reaching_in, sorted(reaching_in)
    users = {
        module
        for module in modules()
        for name in all_imports(modules()[module], module)
        if name.partition(".")[0] == "stdlib_bindings"
    }
    assert users == {"codeact.cli._main"}


def test_the_registry_and_the_dispatch_pipeline_do_not_import_each_other() -> None:
    registry, dispatch = "codeact.contract._registry", "codeact.contract._dispatch"
    assert dispatch in imports_of(registry)  # the registry runs the pipeline...
    assert registry not in imports_of(dispatch)  # ...which is handed what it needs


def test_the_checks_see_what_they_are_meant_to_refuse() -> None:
    """The checkers themselves, on imports and graphs written to be wrong."""
    upward = resolve_name("..runtime._modes", "codeact.contract")  # as a contract module says it
    written = {upward, "codeact", "codeact.plots", "codeact._version", "codeact.contract._json"}
    assert wrong_imports("codeact.contract._dispatch", written) == {
        "codeact.runtime._modes",
        "codeact",
        "codeact.plots",
    }
    assert wrong_imports("codeact.cli._main", written) == {"codeact", "codeact.plots"}
    assert import_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert import_cycle({"a": {"b", "a"}, "b": {"c"}, "c": set()}) == []
