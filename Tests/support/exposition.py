"""Reading Herald's `/metrics` as an operator's tools do, for the suites that scrape `herald serve` and `herald worker`.

The families Herald exports, their types and their HELP texts are read from the one catalogue in the code
(Sources/HeraldMetrics/MetricCatalogue.swift), the metric names the shipped Grafana dashboard asks for from
docs/operations/grafana-dashboard.json.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import requests
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "Sources/HeraldMetrics/MetricCatalogue.swift"
DASHBOARD = ROOT / "docs/operations/grafana-dashboard.json"
PROCESS_METRICS = ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
                   "process_open_fds", "process_max_fds", "process_start_time_seconds"]
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def catalogue() -> dict:
    """{family name: (type, help)} from MetricCatalogue.swift's `Family("name", .kind, "help")` entries."""
    text = CATALOGUE.read_text(encoding="utf-8")
    entries = re.findall(r'Family\(\s*"([a-z0-9_]+)",\s*\.(counter|gauge|histogram),\s*"((?:[^"\\]|\\.)*)"\s*\)', text)
    assert entries, f"no Family(...) entries in {CATALOGUE}"
    return {name: (kind, help_text) for name, kind, help_text in entries}


class Exposition:
    """One scrape: its families' HELP and TYPE lines as written, and its samples through prometheus_client's
    parser (which must accept the whole text)."""

    def __init__(self, text: str):
        self.text = text
        self.help: dict = {}
        self.type: dict = {}
        previous = None
        for line in text.splitlines():
            if line.startswith("# HELP "):
                name, _, help_text = line[len("# HELP "):].partition(" ")
                assert name not in self.help, f"two HELP lines for {name}"
                self.help[name] = help_text
            elif line.startswith("# TYPE "):
                name, _, kind = line[len("# TYPE "):].partition(" ")
                assert name not in self.type, f"two TYPE lines for {name}"
                assert previous == f"# HELP {name} {self.help.get(name)}", f"{name}'s TYPE line has no HELP line before it"
                self.type[name] = kind
            previous = line
        self.samples: dict = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                self.samples[(sample.name, frozenset(sample.labels.items()))] = sample.value

    @property
    def sample_names(self) -> set:
        return {name for name, _ in self.samples}

    def value(self, name: str, **labels) -> float:
        """The sum of `name`'s samples whose labels include `labels` (0 if none)."""
        wanted = set(labels.items())
        return sum(v for (n, ls), v in self.samples.items() if n == name and wanted <= ls)

    def has(self, name: str) -> bool:
        """Whether `name` has a sample: a family's own name, or a histogram's `_bucket`, `_sum` or `_count`."""
        if name in self.sample_names:
            return True
        base = next((name[:-len(s)] for s in HISTOGRAM_SUFFIXES if name.endswith(s)), None)
        return base is not None and self.type.get(base) == "histogram" and any(
            sample.startswith(base + "_") for sample in self.sample_names)


def scrape(url: str, token: str | None = None) -> Exposition:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    resp = requests.get(url.rstrip("/") + "/metrics", headers=headers, timeout=10)
    assert resp.status_code == 200, resp.text
    assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4"), resp.headers
    return Exposition(resp.text)


def assert_described(scraped: Exposition) -> None:
    """Every family has HELP and TYPE lines, both as the catalogue has them, and no family is missing from it."""
    known = catalogue()
    assert scraped.type, "no family in the scrape"
    assert set(scraped.help) == set(scraped.type), "a HELP without a TYPE, or the other way round"
    for name, kind in scraped.type.items():
        assert name in known, f"{name} is exported but not in {CATALOGUE.name}"
        assert scraped.help[name], f"{name} has an empty HELP"
        assert (kind, scraped.help[name]) == known[name], f"{name}: {kind} {scraped.help[name]!r} vs {known[name]}"


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def dashboard_expressions(board: dict | None = None) -> list:
    """Every PromQL expression of the dashboard: its panels' targets (rows' nested panels too) and its variables."""
    board = board or dashboard()
    expressions = []

    def panels(items):
        for panel in items:
            yield panel
            yield from panels(panel.get("panels", []))

    for panel in panels(board["panels"]):
        expressions += [target["expr"] for target in panel.get("targets", [])]
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            expressions.append(variable["definition"])
    return expressions


def dashboard_metric_names(board: dict | None = None) -> set:
    """The metric names the dashboard's expressions use (Herald's are all `herald_…` or `process_…`)."""
    return {name for expr in dashboard_expressions(board) for name in re.findall(r"\b(?:herald|process)_[a-z0-9_]+\b", expr)}
