"""What a conversation touched: files, commands, errors and tools (for the session summary, tags and metadata)."""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

from .conversation import Turn


# frameworks named like files ("Next.js 15 on the front"): a file of that name is a path or a config beside it
_NOT_FILES = r"(?!(?:next|nuxt|node|vue|express|three|d3|chart|ember|backbone|alpine|solid|nest|koa|p5)\.js(?![\w/-]|\.\w))"
_FILE_RE = re.compile(
    r"(?<![\w/.-])" + _NOT_FILES + r"(?:~|\.{1,2})?/?(?:[\w@+-][\w.@+-]*/)*[\w@+-][\w.@+-]*\.(?:py|pyi|js|mjs|cjs|ts|tsx|jsx|rs|go|java|"
    r"kt|rb|php|c|h|cc|cpp|hpp|cs|swift|md|rst|json|jsonl|ya?ml|toml|ini|cfg|conf|env|sh|bash|zsh|sql|txt|csv|html|"
    r"css|scss|vue|svelte|lock|gradle|xml|proto|tf|dockerfile|ipynb)\b(?![\w/])", re.I)
_CLI_WORDS = ("pip", "pip3", "python", "python3", "pytest", "uv", "poetry", "npm", "npx", "pnpm", "yarn", "node",
              "git", "make", "cargo", "go", "docker", "kubectl", "helm", "terraform", "brew", "apt", "apt-get",
              "curl", "wget", "ls", "cd", "cat", "grep", "rg", "sed", "mkdir", "rm", "mv", "cp", "chmod", "ruff",
              "mypy", "black", "tox", "nox", "conda", "bundle", "rails", "mvn", "gradle", "dotnet", "psql",
              "sqlite3", "systemctl", "journalctl", "ssh", "scp", "export", "source", "alembic", "django-admin",
              "flask", "uvicorn", "gunicorn", "remem", "claude", "gh", "bash", "sh", "java", "javac", "tsc",
              "eslint", "prettier", "jest", "vitest", "deno", "bun", "rustc", "gcc", "clang", "cmake", "pre-commit")
_CMD_RE = re.compile(r"^\s*(?:\$\s+)?((?:sudo\s+)?(?:" + "|".join(re.escape(w) for w in _CLI_WORDS) +
                     r")(?:\s+[^\s].*)?)$")
_BACKTICK_RE = re.compile(r"`([^`\n]{2,160})`")
FENCE_RE = re.compile(r"```[\w+-]*\n?(.*?)```", re.S)
_ERROR_LINE_RE = re.compile(
    r"^\s*((?:[\w.]+(?:Error|Exception|Warning|Exit|Interrupt|Fault)|error(?:\[\w+\])?|fatal|FATAL|ERROR|panic|"
    r"npm ERR!|E\s{2,}\w+Error|FAILED|Segmentation fault|command not found)\b[:\s!].{2,}|"
    r".*\bcommand not found\b.*|.*\bNo such file or directory\b.*|.*\bPermission denied\b.*)$", re.M)
_COMMAND_KEYS = ("command", "cmd", "shell_command", "script")
_SHELL_TOOLS = re.compile(r"bash|shell|terminal|exec|run|command|console|sh$", re.I)


def _add_unique(out: list[str], item: str, cap: int) -> None:
    item = item.strip()
    if item and item not in out and len(out) < cap:
        out.append(item)


def extract_identifiers(turns: Sequence[Turn]) -> dict[str, list[str]]:
    """Files, commands, errors and tools a conversation touched (for tags, metadata and the summary)."""
    files: list[str] = []
    commands: list[str] = []
    errors: list[str] = []
    tools: list[str] = []
    for t in turns:
        if t.role == "tool_call":
            _add_unique(tools, t.name or "tool", 12)
            args = t.args or {}
            for key in _COMMAND_KEYS:
                if isinstance(args.get(key), str):
                    _add_unique(commands, args[key].strip().splitlines()[0][:160] if args[key].strip() else "", 10)
            if not any(isinstance(args.get(k), str) for k in _COMMAND_KEYS) and _SHELL_TOOLS.search(t.name or "") \
                    and isinstance(args.get("input"), str):
                _add_unique(commands, args["input"].strip()[:160], 10)
            for value in _strings(args):
                for m in _FILE_RE.finditer(value):
                    _add_unique(files, m.group(0), 15)
        elif t.role == "tool_result":
            found = error_lines(t.text)
            if found:
                _add_unique(errors, found[-1][:200], 6)
        elif t.role in ("user", "assistant"):
            prose = FENCE_RE.sub(" ", t.text)
            for m in _FILE_RE.finditer(prose):
                _add_unique(files, m.group(0), 15)
            for block in FENCE_RE.findall(t.text):
                for line in block.splitlines():
                    cm = _CMD_RE.match(line)
                    if cm:
                        _add_unique(commands, cm.group(1)[:160], 10)
            for tick in _BACKTICK_RE.findall(prose):
                cm = _CMD_RE.match(tick)
                if cm and " " in cm.group(1):
                    _add_unique(commands, cm.group(1)[:160], 10)
            if t.role == "user":
                for line in error_lines(t.text)[-1:]:
                    _add_unique(errors, line[:200], 6)
    return {"files": files, "commands": commands, "errors": errors, "tools": tools}


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def error_lines(text: str) -> list[str]:
    return [m.group(0).strip() for m in _ERROR_LINE_RE.finditer(text or "")][-3:]


__all__ = ["FENCE_RE", "error_lines", "extract_identifiers"]
