"""Every citation of the project's docs resolves to a heading that exists.

Code and docs cite protocol facts and decisions as ``docs/<file>.md#<anchor>`` (and Markdown
files link to each other's sections as ``[text](file.md#anchor)``). A renamed heading or a typo
would leave a maintainer following a dead link, so every such citation in the repository is
resolved here against the headings' GitHub-style anchors. The old citation forms, which pointed
outside the repository, must not come back.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: The repository's own top-level names (DEVELOPERS.md), so virtualenvs and build output are
#: never read.
SCANNED = ("gateway", "receiver", "tests", "helm", "bench", "docs", ".ci")
SCANNED_FILES = ("README.md", "pyproject.toml", "Dockerfile")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".txt", ".tpl", ".sh", ""}

#: ``docs/protocol.md#push-headers`` anywhere in any file.
DOCS_CITATION = re.compile(r"\bdocs/([\w./-]+?\.md)#([\w-]+)")
#: ``](delivery.md#the-request)``, ``](#raw-request-uri)``, ``](docs/x.md)`` in Markdown.
MARKDOWN_LINK = re.compile(r"\]\((?!https?:|mailto:)([\w./-]*?\.md)?(?:#([\w-]+))?\)")
#: Citations of documents outside the repository, or of numbered sections nobody can follow.
OLD_FORMS = re.compile(
    "|".join(
        (
            "(?-i:DECISIONS)",
            "\u00a7",  # the section sign
            r"\bthe seeds?\b",
            r"\bseeds?'s?\B",
            r"\bseed (?:section|sample|example|table)",
        )
    ),
    re.IGNORECASE,
)


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lowercase, punctuation dropped, spaces to dashes."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every heading's anchor in a Markdown file (fenced code blocks skipped, repeats numbered)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fenced or not match:
            continue
        anchor = github_anchor(match.group(1))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        found.add(anchor if count == 0 else f"{anchor}-{count}")
    return frozenset(found)


def scanned_files() -> Iterator[Path]:
    """The repository's text files, but this one (its examples are broken on purpose)."""
    this_file = Path(__file__).resolve()
    for path in _repository_files():
        if path.resolve() != this_file:
            yield path


#: Installed, not written here: bytecode and the Node.js packages tests/node installs.
_INSTALLED = frozenset({"__pycache__", "node_modules"})


def _repository_files() -> Iterator[Path]:
    for name in SCANNED_FILES:
        if (ROOT / name).is_file():
            yield ROOT / name
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix in TEXT_SUFFIXES and path.is_file() and not _INSTALLED & set(path.parts):
                yield path


def citations(path: Path, text: str) -> Iterator[tuple[Path, str | None]]:
    """(target file, anchor or None) for every citation in one file's text."""
    for match in DOCS_CITATION.finditer(text):
        yield ROOT / "docs" / match.group(1), match.group(2)
    if path.suffix == ".md":
        for match in MARKDOWN_LINK.finditer(text):
            target, anchor = match.groups()
            if target is None and anchor is None:
                continue
            yield (path.parent / target if target else path), anchor


def broken_citations(path: Path, text: str) -> list[str]:
    broken = []
    for target, anchor in citations(path, text):
        if not target.is_file():
            broken.append(f"{target.relative_to(ROOT)}: no such file")
        elif anchor is not None and anchor not in anchors(target.resolve()):
            broken.append(f"{target.relative_to(ROOT)}#{anchor}: no such heading")
    return broken


def test_every_citation_resolves() -> None:
    problems = {}
    for path in scanned_files():
        broken = broken_citations(path, path.read_text(encoding="utf-8", errors="replace"))
        if broken:
            problems[str(path.relative_to(ROOT))] = broken
    assert problems == {}


def test_no_citation_of_documents_outside_the_repository() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in scanned_files()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if OLD_FORMS.search(line)
    ]
    assert offenders == []


def test_the_protocol_document_is_cited() -> None:
    """The sweep is real: the code cites protocol.md, and protocol.md has the sections."""
    cited = {
        anchor
        for path in scanned_files()
        if path.suffix == ".py"
        for target, anchor in citations(path, path.read_text(errors="replace"))
        if target.name == "protocol.md"
    }
    assert {"string-to-sign", "raw-request-uri", "push-headers", "retry-schedules"} <= cited


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("String to sign", "string-to-sign"),
        ("Content-MD5", "content-md5"),
        ("Testing your application: `receiver.testing`",
         "testing-your-application-receivertesting"),
        ("Figures on the 2-core development machine (2026-11-21, quiet)",
         "figures-on-the-2-core-development-machine-2026-11-21-quiet"),
        ("Bridging topics into queues (for `gateway/delivery`)",
         "bridging-topics-into-queues-for-gatewaydelivery"),
    ],
)  # fmt: skip
def test_anchors_are_githubs(heading: str, anchor: str) -> None:
    assert github_anchor(heading) == anchor


def test_a_missing_heading_or_file_is_reported(tmp_path: Path) -> None:
    doc = ROOT / "docs" / "protocol.md"
    text = "see docs/protocol.md#string-to-sign and docs/protocol.md#no-such-heading"
    assert broken_citations(doc, text) == ["docs/protocol.md#no-such-heading: no such heading"]
    assert broken_citations(doc, "docs/nowhere.md#x") == ["docs/nowhere.md: no such file"]
    assert broken_citations(doc, "[raw](#raw-request-uri) [gone](#gone)") == [
        "docs/protocol.md#gone: no such heading"
    ]


def test_old_forms_are_recognised() -> None:
    for line in ("(DECISIONS \u00a71)", "the seeds' table", "the seed's example", "\u00a74"):
        assert OLD_FORMS.search(line), line
    for line in ("random.Random(seed)", "for seed in range(3)", "the decisions we made"):
        assert not OLD_FORMS.search(line), line
