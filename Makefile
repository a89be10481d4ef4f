# Herald: the two set-up commands are `make demo` and `make test`.
SHELL := /bin/bash
SWIFT ?= swift
PYTHON ?= python3
BENCH_N ?= 20000
BENCH_SCALE_STEPS ?= 2

.PHONY: demo test test-run deps build bench bench-scale docs format lint clean

## Run Herald's main job on the embedded defaults (SQLite + a local capture SMTP server). Installs and builds only
## what the demo runs (`make test` builds the rest).
demo:
	scripts/install-deps.sh demo
	$(SWIFT) build --product herald
	scripts/demo.sh

## Install what is needed, build, and run the Swift and the end-to-end Python tests, beside a throwaway PostgreSQL
## cluster (scripts/with-postgres.sh) that the PostgreSQL store's tests use.
test: deps build
	$(SWIFT) format lint --strict --recursive Sources Tests Package.swift
	scripts/with-postgres.sh $(MAKE) --no-print-directory test-run

test-run:
	$(SWIFT) test --skip-build
	$(PYTHON) -m pytest -q -p no:cacheprovider Tests/integration Tests/http Tests/campaigns Tests/compat Tests/console Tests/postgres Tests/docs

## Debian packages (libcurl4-openssl-dev, …) and Python test tools, installed only when missing.
deps:
	scripts/install-deps.sh

## One debug build serves tests and the CLI (`--build-tests` recompiles everything otherwise).
build:
	$(SWIFT) build --build-tests

## Throughput at 1 and 4 connections against Postfix's smtp-sink, beside smtp-source (rates, CPU per message,
## peak RSS, import speed), 1 and 3 workers on a PostgreSQL ledger (a throwaway cluster with fsync on), then the front door's memory under
## 15,000 hostile requests of each shape (scripts/soak-headers.py); not a test.
bench:
	scripts/install-deps.sh bench
	$(SWIFT) build -c release --product herald
	HERALD_POSTGRES_DURABLE=1 scripts/with-postgres.sh $(PYTHON) scripts/bench.py --herald .build/release/herald -n $(BENCH_N)
	$(PYTHON) scripts/soak-headers.py --herald .build/release/herald --count 15000

## What the ledger's size costs: a SQLite ledger grown by campaigns of 1,000,000 rows (BENCH_SCALE_STEPS of them)
## drained to smtp-sink, with /metrics, the console's overview, the campaign list and report and the audit timed at
## each size, and the bytes each message takes; then the first campaign pruned under paced API load; not a test.
bench-scale:
	scripts/install-deps.sh bench
	$(SWIFT) build -c release --product herald
	$(PYTHON) scripts/bench-scale.py --herald .build/release/herald --steps $(BENCH_SCALE_STEPS) --prune

## The documentation site: the reference pages generated from the code (scripts/docs.py: configuration keys, the CLI's
## --help from .build/debug/herald when it is built, the OpenAPI document, error codes), then `mkdocs build --strict`
## into site/.
docs:
	$(PYTHON) scripts/docs.py
	$(PYTHON) -m mkdocs build --strict --site-dir site

format:
	$(SWIFT) format --in-place --recursive Sources Tests Package.swift

lint:
	$(SWIFT) format lint --recursive Sources Tests Package.swift

clean:
	rm -rf .build var site
