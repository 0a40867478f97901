# Two commands a newcomer needs: `make run` and `make test`. Both create .venv on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PORT ?= 8000
TEST_VAR := $(CURDIR)/var/test

.PHONY: run test test-faults lint format bench install clean

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

install: $(STAMP)

## make run: web (ASGI), Celery worker and beat, the demo agent; Ctrl-C stops them all.
run: $(STAMP)
	PORT=$(PORT) $(PY) -m config.launcher

## make test: the whole suite. Its own SQLite and embedded Redis live under var/test.
## Exit 5 (no tests collected) is a failure.
test: $(STAMP)
	@mkdir -p $(TEST_VAR)
	@set +e; INBOX_VAR_DIR=$(TEST_VAR) $(PY) -m pytest $(PYTEST_ARGS); rc=$$?; \
	  INBOX_VAR_DIR=$(TEST_VAR) $(PY) -m config.embedded_redis stop $(TEST_VAR) >/dev/null 2>&1; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

## make test-faults: kill workers, the agent, Redis, PostgreSQL and web processes of a running deployment
## (its own PostgreSQL cluster and Redis under a temp dir) and check nothing is lost, doubled or late.
test-faults: $(STAMP)
	timeout 900 $(PY) -m tests.faults.suite $(FAULTS_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: $(STAMP)
	@for script in bench/*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

clean:
	-$(PY) -m config.embedded_redis stop $(CURDIR)/var
	rm -rf var/test
