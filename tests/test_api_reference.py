"""The API pages carry each module's signatures and summaries, fresh from the docstrings (issue 23.7)."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_generator():
    spec = importlib.util.spec_from_file_location("api_summary", os.path.join(ROOT, "docs", "api_summary.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_pages_list_signatures_and_are_fresh():
    generator = load_generator()
    stale = generator.stale_pages()
    assert not stale, f"{stale} are stale: run python docs/api_summary.py and commit the pages"
    with open(os.path.join(ROOT, "docs", "api", "pinn.problem.md"), encoding="utf-8") as file:
        page = file.read()
    assert "- class `Problem(domain: Box, residual: Residual, needs: Sequence[str]" in page
    assert "A PDE on a domain, solved for one or more output fields" in page
    assert page.index(generator.END) < page.index("::: hodiff.pinn.problem")
