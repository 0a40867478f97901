# Two commands a newcomer needs: `make run` and `make test`. Both create .venv on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PORT ?= 8000
TEST_VAR := $(CURDIR)/var/test

.PHONY: run test test-fast test-faults lint format bench install clean frameworks-venvs frameworks-node test-frameworks bench-smoke

## The venv itself, before anything else writes under .venv (the framework venvs live in .venv/frameworks: two
## `python -m venv` racing to create .venv fail with "File exists").
$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): requirements.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	@echo "Installing the Python packages into $(VENV) (a few minutes the first time; each line is one package)..."
	set -o pipefail; $(PY) -m pip install --progress-bar off -r requirements-dev.txt | { grep --line-buffered '^Collecting' || true; }
	touch $(STAMP)

install: $(STAMP)

## make run: web (ASGI), Celery worker and beat, the demo agent; Ctrl-C stops them all. The launcher replaces the
## recipe's shell (exec) and watches make, its parent: killing make, even with SIGKILL, stops everything.
run: $(STAMP)
	exec env PORT=$(PORT) DEBUG=$${DEBUG:-0} $(PY) -m config.launcher

## make test: the whole suite. Its own SQLite and embedded Redis live under var/test.
## Exit 5 (no tests collected) is a failure. TEST_PROCESSES pytest-xdist processes share the tests out (most of a
## test's time is spent waiting on a browser, a server or a worker, so more processes than cores pay off);
## TEST_PROCESSES=0 runs them all in this one process.
TEST_PROCESSES ?= 4
test: $(STAMP)
	@mkdir -p $(TEST_VAR)
	@set +e; INBOX_VAR_DIR=$(TEST_VAR) $(PY) -m pytest -n $(TEST_PROCESSES) --dist worksteal $(PYTEST_ARGS); rc=$$?; \
	  INBOX_VAR_DIR=$(TEST_VAR) $(PY) -m config.embedded_redis stop $(TEST_VAR) >/dev/null 2>&1; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

## Framework round trips (tests/frameworks): each framework's AG-UI integration in its own venv
## (.venv/frameworks/<name>, from requirements-frameworks-<name>.txt: they pin versions the inbox cannot take).
FRAMEWORKS ?= pydantic-ai strands adk agent-framework crewai ag2 claude-managed-agents claude-sdk
FRAMEWORK_VENVS := .venv/frameworks

$(FRAMEWORK_VENVS)/%/.installed: requirements-frameworks-%.txt | $(PY)
	test -x $(FRAMEWORK_VENVS)/$*/bin/python || $(PYTHON) -m venv $(FRAMEWORK_VENVS)/$*
	$(FRAMEWORK_VENVS)/$*/bin/python -m pip install --quiet --upgrade pip
	$(FRAMEWORK_VENVS)/$*/bin/python -m pip install --quiet -r requirements-frameworks-$*.txt
	touch $@

frameworks-venvs: $(foreach fw,$(FRAMEWORKS),$(FRAMEWORK_VENVS)/$(fw)/.installed)

## The TypeScript integrations (NODE_FRAMEWORKS, tests/frameworks/servers/node): Node itself (the `node` package,
## a Node 22 binary) and their packages come from the npm registry, pinned in that directory's package-lock.json;
## `npm ci` runs on the machine's npm, the agents on the Node it installed.
NODE_FRAMEWORKS ?= mastra copilotkit langgraph-js
NODE_AGENTS := tests/frameworks/servers/node

$(NODE_AGENTS)/node_modules/.installed: $(NODE_AGENTS)/package.json $(NODE_AGENTS)/package-lock.json
	cd $(NODE_AGENTS) && SCARF_ANALYTICS=false npm ci --no-audit --no-fund --loglevel=error
	$(NODE_AGENTS)/node_modules/.bin/node --version
	touch $@

frameworks-node: $(if $(NODE_FRAMEWORKS),$(NODE_AGENTS)/node_modules/.installed)

## make test-frameworks: the round trips of FRAMEWORKS and NODE_FRAMEWORKS (default: all of them;
## FRAMEWORKS="pydantic-ai strands" NODE_FRAMEWORKS= picks some), with the same database and Redis settings as
## make test.
test-frameworks: $(STAMP) frameworks-venvs frameworks-node
	@mkdir -p $(TEST_VAR)
	@set +e; INBOX_FRAMEWORK_TESTS=1 INBOX_VAR_DIR=$(TEST_VAR) $(PY) -m pytest \
	  $(foreach fw,$(FRAMEWORKS) $(NODE_FRAMEWORKS),tests/frameworks/test_$(subst -,_,$(fw)).py) $(PYTEST_ARGS); rc=$$?; \
	  INBOX_VAR_DIR=$(TEST_VAR) $(PY) -m config.embedded_redis stop $(TEST_VAR) >/dev/null 2>&1; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc


## make test-fast: the edit-run loop; no browser, no Celery worker, no AG-UI agent process (markers in pytest.ini).
test-fast: $(STAMP)
	@$(MAKE) --no-print-directory test PYTEST_ARGS='-m "not browser and not worker and not integration" $(PYTEST_ARGS)'

## make lint: style and layout (ruff, complexity <= 20), types (mypy.ini), the dependency rule (.importlinter), models
## without a migration and apps with more than one leaf migration (django-linear-migrations' system checks).

## make test-faults: kill workers, the agent, Redis, PostgreSQL and web processes of a running deployment
## (its own PostgreSQL cluster and Redis under a temp dir) and check nothing is lost, doubled or late.
test-faults: $(STAMP)
	timeout 1500 $(PY) -m tests.faults.suite $(FAULTS_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	$(PY) manage.py makemigrations --check --dry-run

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

## make bench: every benchmark at full size (PostgreSQL and Redis servers on loopback; takes a while).
BENCHES := ingest inbox_list snooze_list pages expiry escalation backtest export audit_verify resume live next_page mixed_load burst
bench: $(STAMP)
	@for script in $(BENCHES); do echo "== bench/$$script.py"; $(PY) bench/$$script.py || exit 1; done
	@echo "== bench/burst.py --workers 2"; $(PY) bench/burst.py --workers 2

## make bench-smoke: every benchmark at tiny sizes, so that none of them rots (CI runs it; about 3 minutes alone).
bench-smoke: $(STAMP)
	@set -e; started=$$(date +%s); \
	run() { step=$$(date +%s); echo "== $$*"; $(PY) "$$@" > $(CURDIR)/var/bench-smoke.log 2>&1 || { cat $(CURDIR)/var/bench-smoke.log; exit 1; }; \
	  tail -n 2 $(CURDIR)/var/bench-smoke.log; echo "   ($$(( $$(date +%s) - step )) s)"; }; \
	mkdir -p var; \
	run bench/inbox_list.py --items 2000 --open 200 --repeat 2 --name bench_smoke_pages --keep; \
	run bench/pages.py --repeat 2 --name bench_smoke_pages --reuse --drop; \
	run bench/snooze_list.py --items 2000 --open 200 --repeat 2 --name bench_smoke_snooze; \
	run bench/ingest.py --requests 40 --rounds 1 --concurrency 4; \
	run bench/expiry.py --items 1000 --fresh 100; \
	run bench/escalation.py --items 1000 --fresh 100; \
	run bench/backtest.py --items 2000 --open 200 --decided 500 --repeat 2 --name bench_smoke_backtest; \
	run bench/export.py --decisions 1000; \
	run bench/audit_verify.py --events 2000; \
	BENCH_ROUNDS=2 run bench/resume.py; \
	run bench/live.py --items 10; \
	run bench/next_page.py --clicks 2; \
	run bench/mixed_load.py --seconds 8 --agents 2 --approvers 3; \
	run bench/burst.py --runs 40 --agents 2 --approvers 2 --canaries 0 --drain-timeout 120; \
	echo "bench-smoke: $$(( $$(date +%s) - started )) s"

clean:
	-$(PY) -m config.embedded_redis stop $(CURDIR)/var
	rm -rf var/test
