# Two commands: `make run` opens the app, `make test` runs the whole suite. Each sets up .venv when needed.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

# A bare `make` opens the app (never the benchmark, which takes minutes).
.DEFAULT_GOAL := run
.PHONY: run test bench package clean

bench: $(STAMP)
	$(VENV)/bin/workbench bench

$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test]'
	@touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/workbench

test: $(STAMP)
	$(VENV)/bin/ruff check workbench tests scripts packaging
	$(VENV)/bin/lint-imports
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q

package: $(STAMP)
	$(PY) -m pip install --quiet -c constraints.txt -e '.[package]'
	cd packaging && ../$(PY) -m PyInstaller --noconfirm --distpath ../dist --workpath ../build/pyinstaller workbench.spec
	@du -sh dist/workbench

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache
