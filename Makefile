# `make test` and `make demo` work on a fresh machine: each creates .venv and installs hodiff first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: test lint demo docs benchmark slow clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,docs]'
	touch $(STAMP)

test: lint
	$(PY) -m pytest -m "not slow" -n 2 --dist worksteal -q

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

slow: $(STAMP)
	$(PY) -m pytest -m slow -q

demo: $(STAMP)
	$(PY) -m pinn_examples burgers --overwrite

docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict

benchmark: $(STAMP)
	$(PY) -m benchmarks derivatives

clean:
	rm -rf $(VENV) site
