"""The documentation: links resolve, generated pages are current, the configuration reference is complete, the
Getting started commands exist, and the site builds.

Fast and offline. The `herald` binary (`$HERALD_BIN`, else `.build/debug/herald`) is used when it exists: without it
the CLI page is not regenerated and commands are checked against the committed `docs/reference/cli.md` alone.
"""

import importlib.util
import re
import shlex
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md"] + sorted(DOCS.rglob("*.md"))
COMMAND_PAGES = [DOCS / "getting-started.md", ROOT / "README.md"]


def load_generator():
    """scripts/docs.py as a module."""
    spec = importlib.util.spec_from_file_location("herald_docs", ROOT / "scripts/docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


docs = load_generator()
BINARY = docs.binary_path()


# --- Markdown reading ----------------------------------------------------------------------------------------------


def prose_lines(text):
    """The lines of a Markdown text outside fenced code blocks, with inline code spans blanked out."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(re.sub(r"`[^`]*`", "``", line))
    return lines


def code_blocks(text, languages=("sh",)):
    """The contents of the fenced code blocks in one of `languages`."""
    return re.findall(r"^```(?:" + "|".join(languages) + r")\n(.*?)^```", text, re.S | re.M)


def links(path):
    """The relative link targets of a Markdown file (no scheme, no pure anchors resolved elsewhere)."""
    found = []
    for line in prose_lines(path.read_text()):
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if not re.match(r"[a-z]+:", target):
                found.append(target)
    return found


def heading_texts(path):
    """The text of each heading, as rendered: Markdown inline code marks and links removed."""
    texts, fenced = [], False
    for line in path.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        heading = re.match(r"#{1,6} (.+?)\s*#*$", line)
        if heading and not fenced:
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1))
            texts.append(text.replace("`", ""))
    return texts


def mkdocs_slug(text):
    """Python-Markdown's toc slug, which MkDocs uses."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def github_slug(text):
    """GitHub's heading anchor."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path, slug):
    """Every anchor a page's headings make under one slug rule, duplicates numbered as both renderers do."""
    seen, made = {}, set()
    for text in heading_texts(path):
        base = slug(text)
        count = seen.get(base, 0)
        seen[base] = count + 1
        made.add(base if count == 0 else f"{base}-{count}")
        made.add(base if count == 0 else f"{base}_{count}")
    return made


def broken_links(path):
    """The links of one page whose file or anchor does not exist (anchors must work on GitHub and in the site)."""
    broken = []
    for target in links(path):
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / file_part).resolve() if file_part else path
        if not destination.exists():
            broken.append(f"{target} (no such file)")
            continue
        if anchor and destination.suffix == ".md":
            if anchor not in anchors(destination, mkdocs_slug) or anchor not in anchors(destination, github_slug):
                broken.append(f"{target} (no such anchor)")
    return broken


# --- links ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page):
    assert broken_links(page) == []


def test_the_link_checker_sees_a_broken_anchor(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A title\n\n[fine](#a-title) [broken](#nowhere) [gone](missing.md) `[code](#skipped)`\n")
    assert broken_links(page) == ["#nowhere (no such anchor)", "missing.md (no such file)"]


# --- generated pages -----------------------------------------------------------------------------------------------


def test_generated_pages_are_current():
    stale = [str(path.relative_to(ROOT)) for path, contents in docs.pages().items()
             if not path.exists() or path.read_text() != contents]
    assert stale == [], "stale generated pages: run `make docs`"


def test_the_cli_page_comes_from_the_binary():
    if not BINARY.exists():
        pytest.skip(f"no herald binary at {BINARY} (set HERALD_BIN): the committed CLI page was not compared")
    assert (DOCS / "reference/cli.md").read_text() == docs.cli_page(BINARY), "stale CLI page: run `make docs`"


def documented_keys():
    """The keys the configuration reference's tables name."""
    text = (DOCS / "reference/configuration.md").read_text()
    return re.findall(r"^\| `([^`]+)`<br>", text, re.M)


def test_the_configuration_reference_covers_exactly_the_loaders_keys():
    loader = {item.key for item in docs.asked_keys()}
    documented = documented_keys()
    assert len(documented) == len(set(documented)), "a key is documented twice"
    assert sorted(loader - set(documented)) == [], "keys the loader reads but the reference leaves out"
    assert sorted(set(documented) - loader) == [], "keys the reference names but the loader never reads"


def test_dynamic_keys_are_expanded():
    loader = {item.key for item in docs.asked_keys()}
    assert {"links.lifetime.signIn", "links.lifetime.recoverEmail", "worker.maxQueueWait.resetPassword",
            "providers.google.clientId", "providers.oidc.<name>.clientSecret", "webhooks.<name>.secret",
            "limits.projectSharePerNetwork"} <= loader
    assert not any("\\(" in key for key in loader)


def leaf_keys(mapping, prefix=""):
    """The dotted leaf keys of a parsed YAML mapping."""
    keys = []
    for name, value in mapping.items():
        key = f"{prefix}{name}"
        keys += leaf_keys(value, key + ".") if isinstance(value, dict) else [key]
    return keys


def test_the_sample_configuration_sets_only_keys_the_loader_reads():
    loader = {key for item in docs.asked_keys() for key in [item.key] + docs.sections_of(item.key)}
    sample = leaf_keys(yaml.safe_load((ROOT / "config/herald.yaml").read_text()))
    assert sorted(set(sample) - loader) == [], "keys config/herald.yaml sets that Herald does not read"


def test_every_error_code_is_in_the_reference():
    page = (DOCS / "reference/error-codes.md").read_text()
    assert [code for code in docs.error_codes() if f"| `{code}` |" not in page] == []


# --- the Getting started commands ----------------------------------------------------------------------------------


def make_targets():
    """The targets the Makefile defines."""
    return set(re.findall(r"^([A-Za-z][\w-]*):", (ROOT / "Makefile").read_text(), re.M))


def cli_commands():
    """{command words: help text} of every command in the committed CLI reference."""
    text = (DOCS / "reference/cli.md").read_text()
    sections = re.findall(r"^## herald ?(.*?)\n\n```text\n(.*?)^```", text, re.S | re.M)
    return {tuple(words.split()): help_text for words, help_text in sections}


def shell_commands(page):
    """The commands of a page's `sh` blocks: continuation lines joined, comments dropped, split as the shell would."""
    commands = []
    for block in code_blocks(page.read_text()):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            while words and words[-1] == "&":
                words.pop()
            if words:
                commands.append(words)
    return commands


def herald_invocation(words, commands):
    """(command words, flags) of a `herald …` command line, the command words being its longest known subcommand."""
    path = ()
    for word in words[1:]:
        if path + (word,) not in commands:
            break
        path += (word,)
    flags = [word.split("=", 1)[0] for word in words[1:] if word.startswith("--")]
    return path, flags


@pytest.mark.parametrize("page", COMMAND_PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_the_shown_commands_exist(page):
    targets, commands, problems = make_targets(), cli_commands(), []
    for words in shell_commands(page):
        if words[0] == "make":
            problems += [f"make {target}: no such target" for target in words[1:]
                         if "=" not in target and target not in targets]
        if words[0] == "herald":
            path, flags = herald_invocation(words, commands)
            if not path and len(words) > 1:
                problems.append(f"{shlex.join(words)}: no such command")
            problems += [f"{shlex.join(words)}: no {flag} in its --help" for flag in flags
                         if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", commands[path])]
    assert problems == []


def test_the_set_up_is_two_commands():
    readme = (ROOT / "README.md").read_text()
    set_up = readme.split("## Set-up: two commands", 1)[1].split("\n## ", 1)[0]
    assert [words for block in code_blocks(set_up) for words in
            (shlex.split(line, comments=True) for line in block.splitlines()) if words] == [["make", "demo"],
                                                                                           ["make", "test"]]


def test_the_shown_herald_commands_answer_help():
    if not BINARY.exists():
        pytest.skip(f"no herald binary at {BINARY} (set HERALD_BIN): commands checked against the CLI page only")
    commands = cli_commands()
    paths = {herald_invocation(words, commands)[0] for page in COMMAND_PAGES for words in shell_commands(page)
             if words[0] == "herald"}
    for path in sorted(paths):
        result = subprocess.run([str(BINARY), *path, "--help"], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, f"herald {' '.join(path)} --help: {result.stderr}"


# --- the site ------------------------------------------------------------------------------------------------------


def test_the_site_builds_strictly(tmp_path):
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (make deps installs it from Tests/requirements.txt)")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
