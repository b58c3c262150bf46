"""A new user's first hour with the remem plugin in the real ``claude`` CLI: what recall puts in front of the model.

    python -m remem.bench.first_hour [--baseline main] [--embedder auto] [--claude PATH] [--show]

Six scripted sessions (``claude -p`` turns continued with ``--continue``, answered by a fake Anthropic API on
127.0.0.1, tests/anthropic_server.py) tell the project's facts, decisions with their reasons, a lesson and
preferences, between questions and filler ("thanks!", "ok", "hi"); then eight questions (the last a profile
prompt), each in a new session,
ask for what was said. Two sides run the same script on their own HOME and store: the baseline (``--baseline``,
a git ref: main as it is) and this checkout (its files as they are, committed or not). Each side's hooks and
service import that side's remem (``PYTHONPATH``), with ``--plugin-dir`` its own files.

Reported per side, over the eight question prompts (what the UserPromptSubmit hook injected: recall, and the
digest on a session's first prompt):

- gold recall: the prompts whose injected memories hold the answer (a keyword of it);
- noise: the share of injected memory lines that are an earlier question, a filler turn, or a line shown
  already in the same prompt (a repeat); each line is traced to the scripted utterance it shows, or to none
  (a distilled memory, a summary), by its words;
- tokens per prompt (tiktoken cl100k): the injected memory blocks, the import offer left out;
- profiles: the prompts that got an entity's profile (the last question asks about the job queue).

``--show`` prints every injected line with its verdict.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

Turn = tuple[str, str, str, str]  # (what the user says, its kind, the answer, its kind)
Q, F, S = "question", "filler", "statement"  # utterance kinds: questions and filler are noise as memories

SESSIONS: list[list[Turn]] = [
    [("We keep losing jobs when a worker crashes. Should the job queue use Redis or Postgres? We already run "
      "Postgres 16 for everything else.", Q,
      "Use Postgres: workers claim jobs with SELECT ... FOR UPDATE SKIP LOCKED, and a crashed worker's "
      "transaction rolls back, so its job goes back to the queue instead of being lost.", S),
     ("OK, let's go with Postgres then. The job queue uses Postgres with SKIP LOCKED, because with Redis a "
      "crashed worker lost its job.", S, "Noted. I'll build the queue on Postgres 16 with SKIP LOCKED.", S),
     ("thanks!", F, "You're welcome!", F)],
    [("Please remember: never use tabs in this repo, always 4 spaces.", S, "Got it: 4 spaces, never tabs.", S),
     ("And I prefer pytest over unittest for all new tests.", S, "Understood, new tests will use pytest.", S),
     ("ok", F, "👍", F)],
    [("How do we deploy this service?", Q, "I don't see a deploy config in the repo yet. What do you use?", Q),
     ("We deploy with fly.io; the app is called queue-svc and deploys go out from the main branch only.", S,
      "Thanks, noted: fly.io, app queue-svc, deploys from main only.", S)],
    [("The test suite hangs on CI again. Any idea why?", Q,
      "The integration tests open a Postgres connection pool that is never closed, so pytest waits for its "
      "threads at exit.", S),
     ("That fixed it: closing the pool in the session fixture's teardown stopped the hang. Lesson: always close "
      "the connection pool in a fixture teardown.", S, "Great, I'll keep that in mind for new fixtures.", S),
     ("cool thanks", F, "Anytime.", F)],
    [("hi", F, "Hi! What are we working on today?", Q),
     ("What's the capital of Australia?", Q, "Canberra.", S),
     ("The staging database is refreshed from production every night at 02:00 UTC.", S, "Noted.", F)],
    [("Should we log in JSON or in plain text?", Q,
      "JSON: your log pipeline (Loki) can then parse the fields instead of matching text.", S),
     ("Decided: we log in JSON with structlog, because Loki parses the fields.", S,
      "OK, switching the logging to structlog with JSON output.", S),
     ("thanks", F, "Sure.", F)],
]
QUESTIONS: list[tuple[str, tuple[str, ...]]] = [
    ("Why does the job queue use Postgres and not Redis?", ("skip locked", "crashed worker")),
    ("What indentation do we use in this repo?", ("4 spaces",)),
    ("Which test framework should the new tests use?", ("pytest",)),
    ("How do I deploy the queue service?", ("fly.io",)),
    ("CI hangs at the end of the test run; what did we learn last time?", ("close the connection pool",
                                                                          "closing the pool")),
    ("When is the staging database refreshed?", ("02:00",)),
    ("Which logging format do we use, and why?", ("structlog",)),
    ("What do we know about the job queue?", ("skip locked",)),  # a profile prompt (remem.hooks.profiles)
]
PROFILE_MARK = "What is known about "  # the header of an entity profile (remem.core.entities.profile)
_MARK = "UserPromptSubmit hook additional context: "
_LINE = re.compile(r"^(?:- |  (?:… )?)(?:\[[^\]]*\] )?(.*)$")
_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def injected(body: dict) -> str:
    """The UserPromptSubmit hook's additionalContext as the model received it: the end of the message (Claude
    Code sends it as a system message) after its label."""
    import json

    for message in body.get("messages") or []:
        content = message.get("content")
        content = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        if _MARK in content:
            return content[content.index(_MARK) + len(_MARK):]
    return ""


def memory_blocks(context: str) -> str:
    """The context without the import offer (a notice, not memories)."""
    return "\n\n".join(p for p in context.split("\n\n") if not re.match(r"remem: \d+ earlier Claude Code", p))


def memory_lines(context: str) -> list[str]:
    out = []
    for line in context.split("\n"):
        if line.startswith("Last session ("):
            out.append(line.split("): ", 1)[-1])
        elif re.match(r"^(- |  (… )?)\[", line) or (line.startswith("- ") and not line.startswith("- remem")):
            m = _LINE.match(line)
            out.append(re.sub(r"( #[\w./:-]+)+$", "", m.group(1)) if m else line)
    return out


UTTERANCES: list[tuple[set[str], str]] = [
    *((set(words(said)), kind) for s in SESSIONS for u, uk, a, ak in s for said, kind in ((u, uk), (a, ak))),
    *((set(words(q)), Q) for q, _ in QUESTIONS)]  # the question sessions are captured too
SPOKEN = set().union(*(w for w, _ in UTTERANCES))


def verdict(line: str, earlier: list[list[str]]) -> str:
    """noise: "question", "filler", "repeat"; else "ok". A line repeats an earlier line of the same prompt
    when nearly all its words are in it. It shows an utterance when most of its words that anyone said (a
    distiller's framing, "Session summary. The user asked:", left out) are that utterance's and it holds most
    of the utterance; a line showing none (a distilled memory in other words, a summary of several) is "ok"."""
    own = set(words(line))
    if not own:
        return "filler"
    for prev in earlier:
        if len(own & set(prev)) >= 0.9 * len(own):
            return "repeat"
    spoken = own & SPOKEN
    best, best_kind = 0.0, "ok"
    for said, kind in UTTERANCES:
        if not said or not spoken:
            continue
        mine = len(said & spoken) / len(spoken)
        holds = len(said & spoken) / len(said)
        if mine >= 0.8 and holds >= 0.6 and mine + holds > best:
            best, best_kind = mine + holds, kind
    return {Q: "question", F: "filler"}.get(best_kind, "ok")


@dataclass
class Side:
    name: str
    gold: list[bool] = field(default_factory=list)
    lines: list[tuple[str, str]] = field(default_factory=list)  # (line, verdict)
    tokens: list[int] = field(default_factory=list)
    contexts: list[str] = field(default_factory=list)


def export(ref: str | None, dest: Path) -> Path:
    """This checkout's files (``ref`` None: as they are, committed or not) or ``ref``'s, under ``dest/remem``."""
    pkg = dest / "remem"
    pkg.mkdir(parents=True)
    if ref is None:
        listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z"],
                                capture_output=True, check=True).stdout.split(b"\0")
        for name in filter(None, (n.decode() for n in listed)):
            if (ROOT / name).is_file():
                (pkg / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, pkg / name)
    else:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(pkg)], input=archive, check=True)
    return pkg


def run_side(name: str, pkg: Path, claude: str, embedder: str, tmp: Path) -> Side:
    from anthropic_server import AnthropicServer, text
    from claude_harness import ClaudeMachine

    from remem.core.recall.tokens import count_tokens

    side = Side(name)
    with AnthropicServer() as api:
        env = {"REMEM_EMBEDDER": embedder, "PYTHONPATH": str(pkg.parent), "REMEM_HOOK_RECALL_DEADLINE": "10"}
        machine = ClaudeMachine(tmp / name, api, claude, extra_env=env)
        project = machine.project("queue-svc")
        try:
            for session in SESSIONS:
                for i, (said, _, answer, _) in enumerate(session):
                    api.reply(text(answer))
                    machine.run(said, project, extra=["--continue"] if i else [], plugin_dir=pkg)
                machine.wait_for_captures(timeout=180)
            for question, gold in QUESTIONS:
                api.reply(text("ok"))
                run = machine.run(question, project, plugin_dir=pkg)
                context = memory_blocks(injected(run.requests[0])) if run.requests else ""
                side.contexts.append(context)
                side.gold.append(any(g in context.lower() for g in gold))
                side.tokens.append(count_tokens(context) if context else 0)
                earlier: list[list[str]] = []
                for line in memory_lines(context):
                    side.lines.append((line, verdict(line, earlier)))
                    earlier.append(words(line))
                machine.wait_for_captures(timeout=180)
        finally:
            machine.stop_service()
    return side


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default="main", help="git ref of the baseline side (default: main)")
    ap.add_argument("--embedder", default="auto", help="REMEM_EMBEDDER of both sides (default: auto, a user's)")
    ap.add_argument("--claude", default=None)
    ap.add_argument("--show", action="store_true", help="print every injected line with its verdict")
    args = ap.parse_args(argv)
    from anthropic_server import find_claude

    claude = args.claude or find_claude()
    if claude is None:
        print("no claude CLI found (npm install --prefix ~/.cache/remem-ci/claude-code @anthropic-ai/claude-code)")
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="remem-first-hour-"))
    try:
        sides = [run_side(f"baseline ({args.baseline})", export(args.baseline, tmp / "base"), claude, args.embedder,
                          tmp),
                 run_side("this checkout", export(None, tmp / "this"), claude, args.embedder, tmp)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.show:
        for side in sides:
            print(f"\n=== {side.name}")
            for (question, _), ok, context in zip(QUESTIONS, side.gold, side.contexts):
                print(f"\n--- {question} (gold {'found' if ok else 'MISSING'}, "
                      f"{side.tokens[QUESTIONS.index((question, _))]} tokens)")
                earlier: list[list[str]] = []
                for line in memory_lines(context):
                    print(f"  [{verdict(line, earlier)}] {line[:160]}")
                    earlier.append(words(line))
    print(f"\nfirst hour in the real claude CLI: {len(SESSIONS)} sessions, {len(QUESTIONS)} questions in new "
          f"sessions, embedder={args.embedder}")
    print("| side | gold recall | injected lines | noise lines (questions / filler / repeats) | noise share "
          "| tokens per prompt (median / mean) | profiles |")
    print("|---|---|---|---|---|---|---|")
    for side in sides:
        n = len(side.lines)
        kinds = [v for _, v in side.lines]
        noise = sum(v != "ok" for v in kinds)
        print(f"| {side.name} | {sum(side.gold)}/{len(side.gold)} | {n} | {noise} ({kinds.count('question')} / "
              f"{kinds.count('filler')} / {kinds.count('repeat')}) | {noise / n if n else 0:.0%} | "
              f"{statistics.median(side.tokens):.0f} / {statistics.mean(side.tokens):.0f} | "
              f"{sum(PROFILE_MARK in c for c in side.contexts)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
