# Two commands: `make run` opens the app, `make test` runs the whole suite. Each sets up .venv when needed.
# `make test-fast` is the edit-run loop: everything but the tests marked slow (see pyproject.toml), in ~1.5 min.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

# A bare `make` opens the app (never the benchmark, which takes minutes).
.DEFAULT_GOAL := run
.PHONY: run test test-fast bench package clean ssh-server docs screenshots

bench: $(STAMP)
	$(VENV)/bin/workbench bench

$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test]'
	@touch $(STAMP)

run: $(STAMP) docs
	$(VENV)/bin/workbench

# Two workers (pytest-xdist) whatever the machine: the suite is sized for 2 cores, and most of a test's time is one
# thread (a kernel, a window) with the other core idle. A module's tests stay on one worker (they share fixtures).
# The slowest 20 are printed at the end, so a test that slows the suite down is seen when it lands.
# One OpenMP thread per process (the workers, the kernels and runs they start): two workers of two spinning threads
# each on two cores fought over them (a run of the core tests: 62 s → 58 s). Tests of thread settings set their own.
PYTEST := QT_QPA_PLATFORM=offscreen OMP_NUM_THREADS=1 $(PY) -m pytest -q -n 2 --dist loadfile

# The remote-kernel tests start OpenSSH's sshd on 127.0.0.1 with throw-away keys (tests/support/sshd.py): installed here
# when it is missing and we can (root and apt, as in CI); elsewhere those tests are skipped, and say why.
ssh-server:
	@command -v sshd >/dev/null || test -x /usr/sbin/sshd || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server >/dev/null; \
	  else echo "note: OpenSSH's sshd is missing: the remote-kernel tests will be skipped"; fi; }

# The user guide (mkdocs.yml) into resources/guide (Help → User guide opens it; a wheel builds its own), strict: a broken link, a missing page or a page left out of the nav
# fails it. `make test` builds it first.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# Every screenshot of the README and the guide, made again from the real window on a virtual screen (xvfb-run and
# Qt's xcb libraries: see docs/getting-started.md), stored by feature under docs/screenshots/.
screenshots: $(STAMP)
	QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1440x900x24" $(PY) scripts/screenshots.py

test: $(STAMP) ssh-server docs
	$(VENV)/bin/ruff check workbench tests scripts packaging
	$(VENV)/bin/lint-imports
	$(PYTEST) --durations=20

test-fast: $(STAMP)
	$(VENV)/bin/ruff check workbench tests scripts packaging
	$(PYTEST) -m "not slow" --durations=10 tests/core tests/ui

package: $(STAMP) docs
	$(PY) -m pip install --quiet -c constraints.txt -e '.[package]'
	cd packaging && ../$(PY) -m PyInstaller --noconfirm --distpath ../dist --workpath ../build/pyinstaller workbench.spec
	@du -sh dist/workbench

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache
