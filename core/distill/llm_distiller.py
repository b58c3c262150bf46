"""The LLM distiller: one structured-output extraction call per capture on any OpenAI-compatible endpoint, and
one batched reconciliation call (add / merge / supersede / drop) when candidates resemble stored memories.

The extraction call also returns, per memory, the entities it names and the relations it states (no extra
request); :mod:`~remem.core.distill.llm_claims` parses and vets them before the entity index sees them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from .candidates import DEFAULT_IMPORTANCE, MEMORY_KINDS, Candidate, Distillation
from .conversation import Turn
from .llm_claims import parse_entities, parse_relations
from ..entities.extract import KINDS as ENTITY_KINDS
from ..providers.llm import ChatLLM, DEFAULT_LLM_MODEL, Usage, llm_settings_from_env
from ..recall.fencing import clean_tag, one_line
from ..recall.tokens import count_tokens, truncate_to_tokens
from ..types import MemoryRecord


_EXTRACT_SYSTEM = """You maintain the long-term memory of an AI assistant. From the conversation, extract what will \
still be useful in future conversations, as short standalone statements:
- fact: stable facts about the user, their project, environment or people ("User's team deploys on Fridays").
- preference: likes, dislikes, standing instructions ("User prefers pytest over unittest").
- decision: choices made, WITH the reason when one was given ("Chose Postgres over MySQL because ...").
- lesson: what was tried and whether it worked, root causes, fixes, pitfalls ("X failed because Y; fixed by Z").
- event: notable outcomes or happenings with lasting relevance ("Released v2.1 on 3 May").
Rules: write each memory in the third person ("User ..."), self-contained (no "this"/"it" without a referent),
one idea per memory, under 40 words; keep exact identifiers (file names, commands, versions, error messages).
Never store greetings, thanks, the system prompt, the assistant restating the request, tool output dumps, raw
JSON, logs or secrets ([REDACTED:...] placeholders stay as they are). Skip anything only relevant to this
moment. Importance 1-10: 8-10 identity, strong preferences, hard-won lessons; 5-7 useful facts and decisions;
1-4 minor details. Return an empty list when nothing is worth keeping.
Per memory, `entities`: the people, organisations, places, products, services, repos, files, issues and hosts \
it names (`name` exactly as the memory writes it, `type`); `relations`: what it states between two of them \
(subject, short predicate, object; `since`: the ISO date it became true if said, else ""). Empty lists when none.
Also write `summary`: 2-5 sentences on what this session was about: the request, what was done and the
outcome, with the files/commands that matter. If a previous summary is given, return an updated summary that
covers both the earlier part and the new messages."""

_RECONCILE_SYSTEM = """You keep an assistant's long-term memory consistent. For each NEW candidate memory you see \
the EXISTING memories that look similar. Decide one action per candidate:
- add: it is new information (the similar memories are about something else).
- merge: it adds detail to an existing memory that is still true; give `target` (the existing id) and `text`
  (one combined memory, under 50 words).
- supersede: it contradicts or updates an existing memory (a preference or fact changed, a decision was
  reversed); give `target`. The old memory is kept as history.
- drop: the existing memory already says the same thing, or the candidate is not worth keeping.
Use `target` "" and `text` "" when they do not apply. Return one decision per candidate."""

EXTRACT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["memories", "summary"],
    "properties": {
        "memories": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["text", "kind", "tags", "importance", "entities", "relations"],
                "properties": {
                    "text": {"type": "string"},
                    "kind": {"type": "string", "enum": list(MEMORY_KINDS)},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "importance": {"type": "integer"},
                    "entities": {"type": "array", "items": {
                        "type": "object", "additionalProperties": False, "required": ["name", "type"],
                        "properties": {"name": {"type": "string"},
                                       "type": {"type": "string", "enum": list(ENTITY_KINDS)}}}},
                    "relations": {"type": "array", "items": {
                        "type": "object", "additionalProperties": False,
                        "required": ["subject", "predicate", "object", "since"],
                        "properties": {"subject": {"type": "string"}, "predicate": {"type": "string"},
                                       "object": {"type": "string"}, "since": {"type": "string"}}}},
                },
            },
        },
        "summary": {"type": "string"},
    },
}

RECONCILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["decisions"],
    "properties": {
        "decisions": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["candidate", "action", "target", "text", "reason"],
                "properties": {
                    "candidate": {"type": "integer"},
                    "action": {"type": "string", "enum": ["add", "merge", "supersede", "drop"]},
                    "target": {"type": "string"},
                    "text": {"type": "string"},
                    "reason": {"type": "string"},
                },
            },
        },
    },
}


@dataclass(frozen=True)
class Decision:
    """Reconciliation verdict for candidate ``index``: ``target`` is a real memory id (merge/supersede)."""

    index: int
    action: str
    target: str | None = None
    text: str | None = None
    reason: str = ""


def render_transcript(turns: Sequence[Turn], max_tokens: int = 6000, *, user_tokens: int = 1200,
                      assistant_tokens: int = 800, tool_call_tokens: int = 150, tool_result_tokens: int = 300) -> str:
    """The conversation as compact text for an LLM, within ``max_tokens``: long turns keep their head and
    tail, tool outputs are cut hardest, and when the whole is still too long the middle turns go first."""
    lines: list[str] = []
    for t in turns:
        if t.role == "system":
            continue
        if t.role == "tool_call":
            body = truncate_to_tokens(t.text, tool_call_tokens, keep="head")
            lines.append(f"assistant -> tool {t.name or ''}: {body}")
        elif t.role == "tool_result":
            body = truncate_to_tokens(t.text.strip(), tool_result_tokens, keep="both")
            lines.append(f"tool {t.name or ''} {'error' if t.is_error else 'result'}: {body}")
        else:
            budget = user_tokens if t.role == "user" else assistant_tokens
            lines.append(f"{t.role}: {truncate_to_tokens(t.text.strip(), budget, keep='both')}")
    costs = [count_tokens(ln) + 1 for ln in lines]
    if sum(costs) <= max_tokens:
        return "\n".join(lines)
    head_budget = max_tokens * 3 // 10
    head: list[str] = []
    used = 0
    i = 0
    while i < len(lines) and used + costs[i] <= head_budget:
        head.append(lines[i])
        used += costs[i]
        i += 1
    tail: list[str] = []
    j = len(lines) - 1
    while j >= i and used + costs[j] + 12 <= max_tokens:
        tail.append(lines[j])
        used += costs[j]
        j -= 1
    omitted = j - i + 1
    middle = [f"[... {omitted} turns omitted ...]"] if omitted > 0 else []
    return "\n".join([*head, *middle, *reversed(tail)])


class LLMDistiller:
    """Distillation with an LLM on any OpenAI-compatible endpoint: one extraction call per capture, plus one
    batched reconciliation call when candidates resemble existing memories."""

    def __init__(self, model: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, max_retries: int = 2, temperature: float | None = 0.0,
                 max_input_tokens: int = 6000, max_memories: int = 20, neighbours: int = 3,
                 llm: ChatLLM | None = None) -> None:
        self.llm = llm or ChatLLM(model or DEFAULT_LLM_MODEL, base_url=base_url, api_key=api_key, timeout=timeout,
                                  max_retries=max_retries, temperature=temperature)
        self.model = self.llm.model
        self.name = f"llm:{self.model}"
        self.max_input_tokens = max_input_tokens
        self.max_memories = max_memories
        self.neighbours = neighbours

    @classmethod
    def from_env(cls, **kwargs: Any) -> "LLMDistiller | None":
        settings = llm_settings_from_env()
        return cls(**settings, **kwargs) if settings else None

    # ------------------------------------------------------------------ call 1: extraction
    def extract_messages(self, turns: Sequence[Turn], previous_summary: str | None) -> list[dict[str, str]]:
        transcript = render_transcript(turns, self.max_input_tokens)
        user = []
        if previous_summary:
            user.append("Previous summary of this session (the messages below continue it):\n"
                        + truncate_to_tokens(previous_summary, 400, keep="head"))
        user.append("Conversation:\n" + transcript)
        return [{"role": "system", "content": _EXTRACT_SYSTEM}, {"role": "user", "content": "\n\n".join(user)}]

    def parse_extraction(self, data: Mapping[str, Any], usage: Usage) -> Distillation:
        cands: list[Candidate] = []
        for item in data.get("memories") or []:
            if not isinstance(item, Mapping) or not isinstance(item.get("text"), str) or not item["text"].strip():
                continue
            kind = str(item.get("kind") or "fact").lower()
            kind = kind if kind in MEMORY_KINDS else "fact"
            try:
                importance = int(item.get("importance") or DEFAULT_IMPORTANCE[kind])
            except (TypeError, ValueError):
                importance = DEFAULT_IMPORTANCE[kind]
            # a model's tag is cleaned, not refused: one with a line break (a model steered by what it read) would
            # fail the write of every memory of the capture (tags are checked on write; see fencing.clean_tag)
            tags = tuple(dict.fromkeys(clean_tag(t).lower()[:60] for t in (item.get("tags") or [])
                                       if isinstance(t, (str, int)) and clean_tag(t)))[:6]
            # entities and relations are extras: a malformed one is dropped, never the memory (llm_claims)
            entities = parse_entities(item.get("entities"))
            cands.append(Candidate(text=item["text"].strip(), kind=kind, tags=tags,
                                   importance=min(10, max(1, importance)), entities=entities,
                                   relations=parse_relations(item.get("relations"), entities)))
        summary = data.get("summary")
        summary = summary.strip() if isinstance(summary, str) and summary.strip() else None
        return Distillation(candidates=cands[: self.max_memories], summary=summary, usage=usage)

    def extract(self, turns: Sequence[Turn], previous_summary: str | None = None) -> Distillation:
        data, usage = self.llm.complete_json(self.extract_messages(turns, previous_summary), EXTRACT_SCHEMA,
                                             "memories")
        return self.parse_extraction(data, usage)

    async def aextract(self, turns: Sequence[Turn], previous_summary: str | None = None) -> Distillation:
        data, usage = await self.llm.acomplete_json(self.extract_messages(turns, previous_summary), EXTRACT_SCHEMA,
                                                    "memories")
        return self.parse_extraction(data, usage)

    # ------------------------------------------------------------------ call 2: reconciliation
    @staticmethod
    def reconcile_messages(cands: Sequence[Candidate], neighbours: Mapping[int, Sequence[MemoryRecord]]
                           ) -> tuple[list[dict[str, str]], dict[str, str]]:
        """The prompt, and the short-id -> memory-id map (short ids save tokens and stop invented UUIDs)."""
        short: dict[str, str] = {}
        back: dict[str, str] = {}
        existing_lines: list[str] = []
        cand_lines: list[str] = []
        for i, cand in enumerate(cands):
            if not neighbours.get(i):
                continue  # nothing similar stored: it is simply added, no need to ask
            refs = []
            for rec in neighbours.get(i, ()):
                if rec.id not in back:
                    sid = f"m{len(short) + 1}"
                    short[sid] = rec.id
                    back[rec.id] = sid
                    when = (rec.valid_from or rec.created_at).date().isoformat()
                    # one line each: a stored memory cannot write a line of its own ("NEW candidates: ...")
                    existing_lines.append(f"{sid} [{rec.kind}, {when}] {one_line(truncate_to_tokens(rec.text, 120))}")
                refs.append(back[rec.id])
            cand_lines.append(f"{i} [{cand.kind}] {one_line(cand.text)}  (similar: {', '.join(refs)})")
        user = "EXISTING memories:\n" + "\n".join(existing_lines) + "\n\nNEW candidates:\n" + "\n".join(cand_lines)
        return [{"role": "system", "content": _RECONCILE_SYSTEM}, {"role": "user", "content": user}], short

    @staticmethod
    def parse_decisions(data: Mapping[str, Any], short: Mapping[str, str], n: int,
                        asked: Iterable[int] | None = None) -> list[Decision]:
        """One decision per candidate (``add`` for any the model skipped, mislabeled or was not asked about)."""
        allowed = set(range(n)) if asked is None else set(asked)
        out: dict[int, Decision] = {}
        for item in data.get("decisions") or []:
            if not isinstance(item, Mapping):
                continue
            try:
                idx = int(item.get("candidate"))
            except (TypeError, ValueError):
                continue
            action = str(item.get("action") or "add").lower()
            if idx not in allowed or idx in out or action not in ("add", "merge", "supersede", "drop"):
                continue
            raw_target = str(item.get("target") or "").strip()
            target = short.get(raw_target) or (raw_target if raw_target in short.values() else None)
            if action in ("merge", "supersede") and target is None:
                action = "add"  # an unknown target: keeping the candidate is the safe choice
            text = item.get("text") if isinstance(item.get("text"), str) and item.get("text").strip() else None
            out[idx] = Decision(idx, action, target, text.strip() if text else None, str(item.get("reason") or ""))
        return [out.get(i, Decision(i, "add")) for i in range(n)]

    def reconcile(self, cands: Sequence[Candidate], neighbours: Mapping[int, Sequence[MemoryRecord]]
                  ) -> tuple[list[Decision], Usage]:
        messages, short = self.reconcile_messages(cands, neighbours)
        data, usage = self.llm.complete_json(messages, RECONCILE_SCHEMA, "reconcile")
        return self.parse_decisions(data, short, len(cands), [i for i in neighbours if neighbours[i]]), usage

    async def areconcile(self, cands: Sequence[Candidate], neighbours: Mapping[int, Sequence[MemoryRecord]]
                         ) -> tuple[list[Decision], Usage]:
        messages, short = self.reconcile_messages(cands, neighbours)
        data, usage = await self.llm.acomplete_json(messages, RECONCILE_SCHEMA, "reconcile")
        return self.parse_decisions(data, short, len(cands), [i for i in neighbours if neighbours[i]]), usage

    def __repr__(self) -> str:
        return f"LLMDistiller(model={self.model!r}, base_url={self.llm.base_url!r})"


__all__ = ["Decision", "EXTRACT_SCHEMA", "LLMDistiller", "RECONCILE_SCHEMA", "render_transcript"]
