# Two entry points (see README): `make demo` and `make test`. Both set up .venv first.
# `make docs` builds the docs site into build/site (make test does too).
# `make test-llm` is the real-model tier: it adds the `llm` extra and runs tests/llm on llama.cpp.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LLM_STAMP := $(VENV)/.installed-llm

.PHONY: demo demo-zh test test-pg test-llm lint docs setup clean browser postgres-server postgres

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

# llama.cpp is built for a portable x86-64 (AVX2) rather than this CPU: a native build used
# AMX on a VM whose kernel does not allow it, and the server segfaulted on its first completion.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

$(LLM_STAMP): $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install -q -e '.[dev,llm]'
	touch $(LLM_STAMP)

setup: $(STAMP)

# The English sample scenario on the embedded defaults: SQLite checkpoints + the offline
# simulator. The Chinese one: `make demo-zh`.
demo: $(STAMP)
	$(BIN)/staffroom run escalation --message "Ticket #4411 from Acme Corp: the checkout API returns HTTP 502 for about 30% of requests since 09:40 UTC" --script scenarios/escalation.script.txt

demo-zh: $(STAMP)
	$(BIN)/staffroom run tech-article --message "主题：用 SQLite 做本地优先应用的数据层，读者是后端工程师" --script scenarios/tech_article.script.txt

lint: $(STAMP)
	$(BIN)/ruff format --check framework tests benchmarks notebooks
	$(BIN)/ruff check framework tests benchmarks notebooks
	$(BIN)/mypy framework

# The viewer's browser tests drive Debian's chromium through Playwright (browser downloads are
# not possible): installed here when missing and this user may (root with apt-get), else skipped.
browser:
	@test -x /usr/bin/chromium || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
		&& DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
		|| echo "note: no /usr/bin/chromium (apt-get install chromium): browser tests are skipped"

# The database tests start a throwaway PostgreSQL cluster of their own (tests/pg_cluster.py):
# its server programs are installed here from Debian's packages when missing and this user
# may (root with apt-get). Without them the database tests fail, saying so: they never skip.
postgres-server:
	@ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || command -v pg_ctl >/dev/null \
		|| { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
		&& DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; } \
		|| echo "note: no PostgreSQL server programs (apt-get install postgresql): database tests fail"

# A local PostgreSQL cluster in ./.staffroom-pg to try the database backend (trusts local
# users: not for production); prints the URL for --database / $$STAFFROOM_DATABASE_URL.
postgres: $(STAMP) postgres-server
	$(BIN)/python -m framework.database.local_cluster start .staffroom-pg

# The docs site (mkdocs.yml, docs/) in strict mode: a broken link, include or API reference
# fails. No network: nothing is fetched. The examples in it run in tests/test_docs.py.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir build/site

# -n auto: one pytest worker per core (pytest-xdist); much of the suite waits on subprocesses
# and sockets, so the workers overlap. `$(BIN)/pytest tests/...` alone runs in one process.
test: lint browser postgres-server docs
	$(BIN)/pytest -n auto

# The whole backend matrix: the database tests, and the runtime, serving, server and memory
# suites again with every store on PostgreSQL (STAFFROOM_TEST_BACKEND, read by tests/conftest.py).
test-pg: $(STAMP) postgres-server
	STAFFROOM_TEST_BACKEND=postgres $(BIN)/pytest -n auto tests/database tests/runtime tests/serving tests/server tests/memory \
		tests/e2e/test_validate_store_cli.py

# Starts llama.cpp's server on 127.0.0.1 (a free port), runs `pytest -m llm tests/llm`, stops it.
test-llm: $(LLM_STAMP)
	$(BIN)/python tests/llm/serve.py

clean:
	rm -rf $(VENV) .staffroom .staffroom-pg .mypy_cache .ruff_cache .pytest_cache
