"""Writes the signatures and one-line summaries of each module into its API page (docs/api/*.md).

The pages render the full reference with mkdocstrings when the site is built; the summary block
makes each page readable without building it (on GitHub, in an editor). Run
``python docs/api_summary.py`` after changing a public signature or a docstring's first line;
``tests/test_api_reference.py`` fails while a page is stale.
"""

from __future__ import annotations

import glob
import importlib
import inspect
import os
import re
import sys

PAGES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "api")
BEGIN = "<!-- summary: written by `python docs/api_summary.py` from the docstrings; do not edit -->"
END = "<!-- end of summary -->"


def _first_line(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    paragraph = doc.split("\n\n")[0]
    return " ".join(paragraph.split())


def _signature(obj: object) -> str:
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"
    text = re.sub(r" at 0x[0-9a-f]+", "", text)  # default values that are functions: no addresses
    text = re.sub(r"(: |-> )'([^']*)'", r"\1\2", text)  # annotations (strings under postponed evaluation)
    return re.sub(r"^\(self(, |\))", lambda m: "(" if m.group(1) == ", " else "()", text)


def _public(module: object) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            n
            for n, value in vars(module).items()
            if not n.startswith("_") and getattr(value, "__module__", None) == module.__name__
        ]
    return sorted(names, key=str.lower)


def module_summary(name: str) -> list[str]:
    """Markdown lines: each public name of module ``name`` with its signature and summary."""
    module = importlib.import_module(name)
    lines = []
    for public in _public(module):
        value = getattr(module, public)
        if inspect.isclass(value):
            lines.append(f"- class `{public}{_signature(value)}`: {_first_line(value)}")
            for method, member in sorted(vars(value).items()):
                if method.startswith("_") or not (inspect.isfunction(member) or isinstance(member, property)):
                    continue
                if isinstance(member, property):
                    lines.append(f"    - `.{method}` (property): {_first_line(member)}")
                else:
                    lines.append(f"    - `.{method}{_signature(member)}`: {_first_line(member)}")
        elif callable(value):
            lines.append(f"- `{public}{_signature(value)}`: {_first_line(value)}")
        else:
            lines.append(f"- `{public}`: {type(value).__name__}")
    return lines


def page_text(path: str) -> str:
    """The page at ``path`` with its summary block written (or rewritten) before the first ``:::`` directive."""
    with open(path, encoding="utf-8") as file:
        text = file.read()
    text = re.sub(rf"\n?{re.escape(BEGIN)}.*?{re.escape(END)}\n", "", text, flags=re.S)
    modules = re.findall(r"^::: ([\w.]+)", text, flags=re.M)
    if not modules:
        return text
    block = [BEGIN, ""]
    for name in modules:
        if len(modules) > 1:
            block += [f"`{name}`:", ""]
        block += module_summary(name) + [""]
    block.append(END)
    first = text.index(f"::: {modules[0]}")
    return text[:first] + "\n".join(block) + "\n\n" + text[first:]


def stale_pages() -> list[str]:
    """The API pages whose summary block differs from what the docstrings give now."""
    stale = []
    for path in sorted(glob.glob(os.path.join(PAGES, "*.md"))):
        with open(path, encoding="utf-8") as file:
            if file.read() != page_text(path):
                stale.append(os.path.relpath(path))
    return stale


def main() -> int:
    for path in sorted(glob.glob(os.path.join(PAGES, "*.md"))):
        text = page_text(path)
        with open(path, encoding="utf-8") as file:
            if file.read() == text:
                continue
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
        print(f"wrote {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
