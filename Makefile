# The commands the README gives. `make run` and `make test` set up first when needed.
.PHONY: setup run test lint format bench

setup:
	platform/setup

run: setup
	.venv/bin/python platform/launch.py $(if $(SECURE),--secure)

test: setup
	.venv/bin/python -m pytest $(PYTEST_ARGS)

# After ruff: the import layering (contracts in pyproject.toml, docs/architecture.md) and
# the types of brokerd.
lint: setup
	.venv/bin/ruff check . && .venv/bin/ruff format --check .
	.venv/bin/lint-imports
	.venv/bin/mypy brokerd

format: setup
	.venv/bin/ruff format . && .venv/bin/ruff check --fix .

bench: setup
	.venv/bin/python -m bench
