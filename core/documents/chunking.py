"""Cutting a text file into chunks a reader can be shown alone: by headings, within a size limit.

Markdown: ATX (``## Title``) and setext (``Title`` over ``===``/``---``) headings, never inside a fenced code
block. reStructuredText: a title is a line underlined (and maybe overlined) with one punctuation character; the
levels are the order each style first appears, as docutils reads them. Plain text: no headings, paragraphs.
A section longer than :data:`MAX_CHUNK_TOKENS` (tiktoken) is cut at blank lines, then at line ends; one with
nothing in it but its heading is joined to what follows it. Each chunk knows its heading path ("Guide > Install")
and its first and last line (1-based).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from ..recall.tokens import count_tokens

MAX_CHUNK_TOKENS = 400
MARKDOWN = frozenset({".md", ".markdown", ".mdx", ".mdown", ".mkd"})
RST = frozenset({".rst", ".rest"})
TEXT = frozenset({".txt", ".text"})
SUFFIXES = MARKDOWN | RST | TEXT
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_RST_ADORN = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}\s*$")


@dataclass(frozen=True)
class Chunk:
    heading: str  # the heading path, " > " between levels; "" before the first heading
    start: int  # first line, 1-based
    end: int  # last line, inclusive
    text: str


@dataclass
class _Section:
    path: tuple[str, ...]
    start: int
    lines: list[str]


def _markdown_sections(lines: list[str]) -> Iterator[_Section]:
    path: list[tuple[int, str]] = []
    current = _Section((), 1, [])
    fence: str | None = None
    for i, line in enumerate(lines):
        heading: tuple[int, str] | None = None
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
        elif (m := _FENCE.match(line)) is not None:
            fence = m.group(1)[0] * 3
        elif (m := _ATX.match(line)) is not None:
            heading = (len(m.group(1)), m.group(2).strip())
        elif (m := _SETEXT.match(line)) is not None and current.lines and current.lines[-1].strip() \
                and not (_ATX.match(current.lines[-1]) or _SETEXT.match(current.lines[-1])):
            title = current.lines.pop()
            heading = (1 if m.group(1)[0] == "=" else 2, title.strip())
            if current.lines:
                yield current
            path = [p for p in path if p[0] < heading[0]] + [heading]
            current = _Section(tuple(t for _, t in path), i, [title, line])  # the title line is line i (1-based)
            continue
        if heading is not None:
            if current.lines:
                yield current
            path = [p for p in path if p[0] < heading[0]] + [heading]
            current = _Section(tuple(t for _, t in path), i + 1, [line])
        else:
            current.lines.append(line)
    if current.lines:
        yield current


def _rst_sections(lines: list[str]) -> Iterator[_Section]:
    styles: list[tuple[str, bool]] = []
    path: list[tuple[int, str]] = []
    current = _Section((), 1, [])
    i = 0
    while i < len(lines):
        line = lines[i]
        over = _RST_ADORN.match(line) is not None
        title_at = i + 1 if over else i
        if title_at + 1 < len(lines) and lines[title_at].strip() and not _RST_ADORN.match(lines[title_at]) \
                and (m := _RST_ADORN.match(lines[title_at + 1])) is not None \
                and len(lines[title_at + 1].rstrip()) >= len(lines[title_at].rstrip()) \
                and (not over or lines[i].strip()[0] == m.group(1)):
            style = (m.group(1), over)
            if style not in styles:
                styles.append(style)
            level = styles.index(style) + 1
            if current.lines:
                yield current
            path = [p for p in path if p[0] < level] + [(level, lines[title_at].strip())]
            end = title_at + 2
            current = _Section(tuple(t for _, t in path), i + 1, lines[i:end])
            i = end
            continue
        current.lines.append(line)
        i += 1
    if current.lines:
        yield current


def _split(section: _Section, limit: int) -> Iterator[tuple[int, list[str]]]:
    """A section's lines in runs of at most ``limit`` tokens: cut at blank lines, a long paragraph at lines."""
    run: list[str] = []
    run_start = section.start
    used = 0
    for offset, line in enumerate(section.lines):
        cost = count_tokens(line) + 1
        boundary = not line.strip()
        if run and used + cost > limit:
            yield run_start, run
            run, run_start, used = [], section.start + offset, 0
        if not run and boundary:
            run_start = section.start + offset + 1
            continue
        run.append(line)
        used += cost
    if run:
        yield run_start, run


def chunks(text: str, suffix: str, *, limit: int = MAX_CHUNK_TOKENS) -> list[Chunk]:
    """``text`` (a file's content) cut into chunks, by the kind of file its ``suffix`` names."""
    lines = text.splitlines()
    suffix = suffix.lower()
    if suffix in MARKDOWN:
        sections = list(_markdown_sections(lines))
    elif suffix in RST:
        sections = list(_rst_sections(lines))
    else:
        sections = [_Section((), 1, lines)]
    out: list[Chunk] = []
    carry: _Section | None = None
    for sec in sections:
        if carry is not None:  # a heading with nothing under it before the next: joined to it
            sec = _Section(sec.path, carry.start, carry.lines + sec.lines)
            carry = None
        body = [ln for ln in sec.lines if ln.strip()]
        if not body:
            continue
        if len(body) <= 2 and sec.path and sec is not sections[-1] and all(
                _ATX.match(ln) or _RST_ADORN.match(ln) or ln.strip() == sec.path[-1] for ln in body):
            carry = sec
            continue
        for start, run in _split(sec, limit):
            while run and not run[-1].strip():
                run.pop()
            if not any(ln.strip() for ln in run):
                continue
            out.append(Chunk(heading=" > ".join(sec.path), start=start, end=start + len(run) - 1,
                             text="\n".join(run).strip("\n")))
    return out


__all__ = ["Chunk", "MAX_CHUNK_TOKENS", "SUFFIXES", "chunks"]
