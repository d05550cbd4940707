"""The module layout (docs/architecture.md): the module graph in that page is the
real one, the layers only import what the table allows, names are imported
from the module that defines them (no re-exports, but for a package
``__init__`` exposing its own public classes, and nothing else), no private
name crosses a module, and the adapters have the same shape
(docs/writing-a-provider.md).

Run ``python -m tests.test_architecture`` to rewrite the graph in the page after
a change of imports."""

from __future__ import annotations

import ast
import functools
import pathlib
import sys

import agentcore

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
BEGIN = "<!-- module graph: written by `python -m tests.test_architecture` -->"
END = "<!-- end of module graph -->"

LAYERS = {
    "integrations": {"*"},
    "engine": {"base", "public", "engine"},
    "public": {"base", "public", "schema", "transport"},
    "providers": {"base", "providers", "transport", "schema"},
    "transport": {"base", "transport"},
    "schema": {"base", "schema"},
    "base": {"base"},
}
"""What each layer may import. base: the value types every layer shares; public:
the user-facing modules at the top of the package; engine: the run loop, above
them (the public modules import nothing of the engine)."""

BASE = {
    "types",
    "files",
    "redaction",
    "errors",
    "settings",
    "context",
    "caching",
    "tokens",
    "history",
    "memo",
    "server_tools",
}


def modules() -> dict[str, pathlib.Path]:
    """Every module of the package by dotted name (``agentcore.engine.loop``)."""
    found = {}
    for path in sorted((ROOT / "agentcore").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def layer(module: str) -> str:
    """The layer of a dotted module name."""
    parts = module.split(".")
    if len(parts) > 2 or module in {"agentcore.engine", "agentcore.providers", "agentcore.transport"}:
        return parts[1]
    if module in {
        "agentcore",
        "agentcore.__main__",
        "agentcore.cli",
        "agentcore.testing",
        "agentcore.aio",
        "agentcore.agent",
    }:
        # The package's face, its asyncio front, its agents (a layer over the
        # loop's run) and its command (agentcore/cli.py, the one module that
        # reads the environment) import what they show; the test kit's models
        # check a history as the adapters do.
        return "integrations"
    return "base" if parts[-1] in BASE else "public"


def imports(path: pathlib.Path, known: dict[str, pathlib.Path]) -> set[str]:
    """The package modules ``path`` imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").startswith("agentcore")
        ):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in known else str(node.module))
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("agentcore"))
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(path, known) - {name} for name, path in known.items()}


def graph_text() -> str:
    lines = []
    for name, deps in graph().items():
        short = sorted(d.removeprefix("agentcore.") for d in deps)
        lines.append(f"{name.removeprefix('agentcore.') or 'agentcore'} -> {', '.join(short) or '(nothing)'}")
    return "```text\n" + "\n".join(lines) + "\n```"


def page_graph() -> str:
    text = PAGE.read_text()
    return text[text.index(BEGIN) + len(BEGIN) : text.index(END)].strip()


def test_the_module_graph_in_docs_architecture_is_current() -> None:
    assert page_graph() == graph_text(), "run `python -m tests.test_architecture` and review the diff"


def test_layers_only_import_what_they_may() -> None:
    wrong = []
    for name, deps in graph().items():
        allowed = LAYERS[layer(name)]
        for dep in deps:
            if "*" not in allowed and layer(dep) not in allowed:
                wrong.append(f"{name} ({layer(name)}) imports {dep} ({layer(dep)})")
    assert wrong == []


def test_the_layer_table_sorts_known_modules() -> None:
    assert layer("agentcore.engine.loop") == "engine"
    assert layer("agentcore.transport.http") == "transport"
    assert layer("agentcore.providers.anthropic") == "providers"
    assert layer("agentcore.providers.openai.chat.stream") == "providers"
    assert layer("agentcore.cli") == "integrations"
    assert layer("agentcore.types") == "base"
    assert layer("agentcore.options") == "public"
    assert layer("agentcore.aio") == "integrations"


@functools.cache
def defined_names(path: pathlib.Path) -> frozenset[str]:
    """Names a module binds itself: functions, classes and assignments, at the
    top level or under a top-level ``if``/``try``; not the names it imports."""
    names = set()
    for top in ast.parse(path.read_text()).body:
        for node in ast.walk(top) if isinstance(top, (ast.If, ast.Try)) else [top]:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return frozenset(names)


@functools.cache
def all_names(path: pathlib.Path) -> frozenset[str]:
    """The names a module lists in ``__all__``."""
    for top in ast.parse(path.read_text()).body:
        if isinstance(top, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in top.targets
        ):
            return frozenset(ast.literal_eval(top.value))
    return frozenset()


def exposed(package: str, known: dict[str, pathlib.Path]) -> dict[str, str]:
    """What a package ``__init__`` exposes: each name of its ``__all__`` it
    imports from one of its own modules, with that module."""
    path = known[package]
    if path.name != "__init__.py" or package == "agentcore":
        return {}
    found = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(package + "."):
            for alias in node.names:
                if alias.name in all_names(path):
                    found[alias.asname or alias.name] = str(node.module)
    return found


@functools.cache
def defined_classes(path: pathlib.Path) -> frozenset[str]:
    """The classes a module defines at its top level."""
    return frozenset(node.name for node in ast.parse(path.read_text()).body if isinstance(node, ast.ClassDef))


def exposure_problems(known: dict[str, pathlib.Path]) -> list[str]:
    """A package ``__init__`` may expose its public classes and nothing else:
    every name it lists in ``__all__`` is defined there or is a public class
    of one of its modules."""
    problems = []
    for package, path in known.items():
        if path.name != "__init__.py" or package == "agentcore":
            continue
        shown = exposed(package, known)
        for name in sorted(all_names(path)):
            if name in defined_names(path):
                continue
            source = shown.get(name)
            if source is None:
                problems.append(
                    f"{package}: {name} is in __all__ but neither defined nor imported from the package"
                )
            elif name.startswith("_") or name not in defined_classes(known[source]):
                problems.append(f"{package}: {name} from {source} is not a public class")
    return problems


def import_problems(path: pathlib.Path, known: dict[str, pathlib.Path]) -> list[str]:
    """Imports in ``path`` of a name from a module that does not define it, or of
    a private name of another module. The package itself (``from agentcore
    import ...``) is the public API and may be imported from, and so is a
    package ``__init__`` for the public classes it exposes (:func:`exposed`)."""
    problems = []
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in known):
            continue
        source = known[node.module]
        names = (
            defined_names(source) | exposed(node.module, known).keys()
            if node.module != "agentcore"
            else frozenset()
        )
        for alias in node.names:
            name = alias.name
            if name.startswith("_") and not name.endswith("__") and source != path:
                problems.append(f"{where}:{node.lineno}: private {node.module}.{name}")
            submodule = f"{node.module}.{name}" in known
            public = node.module == "agentcore" and (name in agentcore.__all__ or name == "__version__")
            if not (submodule or public or name in names):
                problems.append(f"{where}:{node.lineno}: {name} is not defined in {node.module}")
    return problems


def test_names_are_imported_from_the_module_that_defines_them() -> None:
    known = modules()
    files = [p for d in ("agentcore", "tests", "examples", "bench") for p in sorted((ROOT / d).rglob("*.py"))]
    problems = [problem for path in files for problem in import_problems(path, known)]
    assert problems == []


def test_a_package_init_exposes_its_public_classes_and_nothing_else() -> None:
    known = modules()
    assert exposure_problems(known) == []
    assert exposed("agentcore.providers.anthropic", known) == {
        "AnthropicModel": "agentcore.providers.anthropic.model"
    }
    assert exposed("agentcore.providers.openai", known) == {
        "OpenAIChatModel": "agentcore.providers.openai.chat.model",
        "OpenAIResponsesModel": "agentcore.providers.openai.responses.model",
    }


API_PACKAGES = (
    "providers/anthropic",
    "providers/openai/chat",
    "providers/openai/responses",
    "providers/bedrock",
)
"""One package per API, each of the same modules (docs/writing-a-provider.md)."""
SHAPE = {
    "request.py": {"request_body", "SETTINGS", "check_settings", "settings_fields", "file_json"},
    "stream.py": {"StreamState", "map_finish_reason", "usage_from"},
    "model.py": set(),
}
"""What each module of an API package defines, by the same names everywhere."""
GUIDE = ROOT / "docs" / "writing-a-provider.md"


def test_every_api_package_has_the_same_modules_and_names() -> None:
    for package in API_PACKAGES:
        folder = ROOT / "agentcore" / package
        assert sorted(p.name for p in folder.glob("*.py")) == sorted(["__init__.py", *SHAPE]), package
        for module, names in SHAPE.items():
            assert names <= defined_names(folder / module), f"{package}/{module}"
        models = [name for name in defined_classes(folder / "model.py") if name.endswith("Model")]
        assert models, package
        for model in models:  # Bedrock's model.py holds one model per Bedrock API
            assert model in all_names(folder.parent / "__init__.py") | all_names(folder / "__init__.py"), (
                package
            )
    # the error-event function: the Anthropic stream's, and the one both OpenAI APIs share
    assert "error_event" in defined_names(ROOT / "agentcore" / "providers" / "anthropic" / "stream.py")
    assert "error_event" in defined_names(ROOT / "agentcore" / "providers" / "openai" / "shared.py")


def test_the_guide_names_the_modules_and_the_names_as_they_are() -> None:
    guide = GUIDE.read_text()
    for module, names in SHAPE.items():
        assert f"`{module}`" in guide, module
        for name in names:
            assert f"`{name}" in guide, name
    for name in ("StateMachine", "feed(event)", "finish()", "`complete`", "`done`", "Adapter", "_stream("):
        assert name in guide, name
    for package in API_PACKAGES:
        assert (
            f"`agentcore/{package.rsplit('/', 1)[0]}/" in guide or f"`{package.rsplit('/', 1)[1]}/`" in guide
        )


def test_the_exposure_check_finds_a_function_or_a_constant(tmp_path: pathlib.Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "mod.py").write_text("class Model: ...\ndef helper(): ...\nLIMIT = 3\n_Hidden = object\n")
    (package / "__init__.py").write_text(
        "from pkg.mod import LIMIT, Model, helper\n__all__ = ['Model', 'helper', 'LIMIT']\n"
    )
    known = {"pkg": package / "__init__.py", "pkg.mod": package / "mod.py"}
    assert exposure_problems(known) == [
        "pkg: LIMIT from pkg.mod is not a public class",
        "pkg: helper from pkg.mod is not a public class",
    ]


def test_the_import_check_finds_a_re_export_and_a_private_name(tmp_path: pathlib.Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from agentcore.engine.loop import LoopOptions\n"
        "from agentcore.engine.channel import _FINISH\n"
        "from agentcore import version_of_nothing\n"
    )
    assert import_problems(probe, modules()) == [
        "probe.py:1: LoopOptions is not defined in agentcore.engine.loop",
        "probe.py:2: private agentcore.engine.channel._FINISH",
        "probe.py:3: version_of_nothing is not defined in agentcore",
    ]


def _write() -> None:
    text = PAGE.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    PAGE.write_text(text[:start] + "\n" + graph_text() + "\n" + text[end:])


if __name__ == "__main__":
    _write()
    sys.exit(0)
