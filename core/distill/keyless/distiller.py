"""The keyless distiller: deterministic, offline extraction of memories and the session summary.

Sentences are scored against kind patterns (fact, preference, decision, lesson, event); the user's are rewritten
to the third person ("I prefer" -> "User prefers") so a memory reads right in any later prompt. The session
summary keeps the request, the outcome and the files/commands/errors touched.

Both sides of the conversation count: users state facts and standing instructions (including negative ones:
"never", "don't", "avoid", "allergic"), assistants often state the decision or the root cause ("Decision: ...",
"The fix was ..."). A "Reason:" line right after a decision joins it. Questions, offers, one-off instructions
("don't push yet") and referent-less replies ("go with it") are skipped; the admission gate checks the rest.
A user's message that no sentence pattern reads is kept whole when it says one lasting thing
(:mod:`.whole`); an option picked or a proposal accepted is one decision (:mod:`.options`); a
fragment that leans on a photo, the moment or (between people) the listener is none (:mod:`.fragments`).
Covered by the labelled set in ``tests/test_keyless.py``.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from ..admission import admit, content_words
from ..artifacts import error_lines
from ..candidates import DEFAULT_IMPORTANCE, Candidate, Distillation
from ..conversation import Turn
from .cues import (AGREE_RE, ASKED_WHY_RE, CLAUSE_BREAK_RE, CORRECTION_LEAD_RE, DECISION_FIX_RE, FIX_RE,
                           NOT_CHOSEN_RE, REASON_HINT_RE, REASON_LABEL_RE, STATUS_RE, THEN_RE, VAGUE_OBJECT_RE, VAGUE_WORDS,
                           symptom_reported)
from .fragments import a_guess, leans_on_context
from .choices import named_choices, taken_back
from .options import accepted_proposals, picked_options
from .whole import WHOLE_SCORE, answered, listed_under_headers, sharpen_facts, unread_user_turns, whole_message
from .exchange import DONE_RE, PROBLEM_RE, TOLD_LESSON, confirmed_fix_lessons, problem_before_cause, told_whole
from .listener import TO_LISTENER_RE
from .patterns import CHOICE_RE, PATTERNS, Pattern
from .said import (NOT_WANTED_RE, QUESTION_RE, Said, clip_words, ended, content_words_of, entities, is_cause,
                           is_reason, plain_run, split_sentences, turn_groups)
from .summary import merge_parts, render_summary, summary_parts
from ..third_person import CLAUSE_RE, LEAD_RE, QUOTES, first_person_to_user
from ...store.records import normalize_text


_AGREED_RE = re.compile(r"^(?:yes|yeah|yep|agreed|right|exactly|correct|makes sense|good call|true|indeed)\b"
                        r"[\s,.!:;\u2014\u2013-]*", re.I)
_REASON_PREFIX_RE = re.compile(r"^(?:(?:fwiw|btw|also|and)[,]?\s+)*(?:the\s+)?(?:reasons?|why|rationale|motivation)"
                               r"(?:\s*:|\s+(?:is|was|being)\b:?)\s*", re.I)
_NO_X_RE = re.compile(r"^(?:(?:for|in)\s+[^:,]{2,40}[:,]\s*)?(?:no\s+[\w-]+s\b|(?:please\s+)?(?:don'?t|do not|never)\s+"
                      r"use\b)", re.I)
_INSTEAD_RE = re.compile(r"^(?:just\s+|only\s+)?[\w`.+#-]+(?:\s+[\w`.+#-]+){0,3}\s+(?:through|via|with|using|instead)\b",
                         re.I)
"""What to use instead, said after a thing not to use ("No ORMs please. Raw SQL through sqlx."): one preference."""
_MY_X_END_RE = re.compile(r"(?:^|\s)my [\w'-]+(?: [\w'-]+)?$", re.I)
_THATS_HOW_RE = re.compile(r"^that'?s how (?:i|we) (?:want|like|write|structure|do)\b", re.I)
_HEADS_UP_RE = re.compile(r"^(?:(?:one|a) thing (?:you should|to) know|(?:quick |just a |a )?heads[- ]up|fyi|for context|"
                          r"background|for the record)(?: about (?:this|the|our) (?:repo|codebase|project|code))?\s*:\s+"
                          r"(?=\S)", re.I)
"""A lead that announces what follows ("One thing you should know about this repo: billing/ is ..."): the rest is
read on its own. Not when the lead names the subject ("Background on the payments service: it runs ...")."""
_PURPOSE_RE = re.compile(r"\bso(?: that)? (?:we|i|you|it|they) (?:can|could|don'?t|won'?t)\b", re.I)
"""A decision's purpose said in its sentence ("settled on Java 21 so we can use virtual threads"): one memory."""
_DONE_LEAD_RE = re.compile(r"^(?:done|finished)\s*[:\u2014\u2013-]\s+(?=\S)", re.I)
_OPENS_CHOICE_RE = re.compile(r"^(?:[-*]\s+)?[\w./@+#-]{1,64}(?: [\w./@+#-]{1,64}){0,2} (?:instead of|rather than) [\w./@+#-]",
                              re.I)
"""A sentence that opens with the thing chosen ("Meilisearch instead of Elasticsearch: two devs, ..."): a decision."""
_REASON_RE = re.compile(r"\b(?:because|since|so that|due to|as it|otherwise|which means|in order to)\b", re.I)



def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def _substantive(text: str) -> bool:
    """A word that says something ("User likes that better." says nothing later)."""
    return len({w.strip(".,;:!'\"") for w in content_words(text)} - VAGUE_WORDS) >= 1


_LEAD_WORD_RE = re.compile(r"^(?:but|so|and|also|anyway|btw|by the way)\b[,\s]*", re.I)


def _beyond_listener(sentence: str) -> str:
    """``sentence`` without what it says to the listener (see ``TO_LISTENER_RE``): the clauses after a leading
    "Thanks, glad you caught that:" or before a trailing ", I'll let you know how it goes", the whole sentence
    when it names something concrete, else nothing."""
    if not TO_LISTENER_RE.search(sentence):
        return sentence
    from ...recall.lexical import identifiers

    for m in CLAUSE_BREAK_RE.finditer(sentence[:120]):  # the first break after a listener head
        head, rest = sentence[:m.start()], _LEAD_WORD_RE.sub("", sentence[m.end():]).strip()
        if TO_LISTENER_RE.search(head) and not TO_LISTENER_RE.search(rest) and len(rest.split()) >= 2:
            return rest[:1].upper() + rest[1:]
    tail_from = max(0, len(sentence) - 160)
    for m in reversed(list(CLAUSE_BREAK_RE.finditer(sentence, tail_from))):  # or the last break before a listener tail: "We chose X, I'll let you know how it goes"
        head, tail = sentence[:m.start()].rstrip(" ,;:"), sentence[m.end():]
        if TO_LISTENER_RE.search(tail) and not TO_LISTENER_RE.search(head) and len(head.split()) >= 3:
            return head
    if identifiers(sentence) or re.search(r"\d", sentence):
        return sentence
    return ""


def between_people(turns: Sequence[Turn], *, part: bool = False) -> bool:
    """Whether ``turns`` are said between people (named users, no assistant: LoCoMo's friends), not to an
    assistant. ``part``: only the new part of a conversation is known, so one named person talking, with no
    assistant reply, is taken as one side of such a chat (an assistant's session always holds its replies)."""
    if any(t.role == "assistant" for t in turns):
        return False
    users = [t for t in turns if t.role == "user"]
    names = {t.speaker for t in users if t.speaker}
    return len(names) >= 2 or part and bool(users) and all(t.speaker for t in users)


def _attach_error(c: Candidate, ti: int, errors: list[tuple[int, str]]) -> None:
    """A lesson explains the last tool error before it: the error line rides along (once)."""
    for k in range(len(errors) - 1, -1, -1):
        eti, err = errors[k]
        if eti < ti:
            errors.pop(k)
            if err.lower() not in c.text.lower():
                c.text = f"{c.text} (error: {err[:160]})"
                c.metadata["error"] = err[:200]
            return


class KeylessDistiller:
    """Deterministic, offline extraction: pattern-scored sentences become memories with sensible kinds, and the
    session summary keeps the request, the outcome and the files/commands/errors touched. Never fails."""

    name = "keyless"

    def __init__(self, *, max_memories: int = 12, min_score: float = 0.6, max_words: int = 60) -> None:
        self.max_memories = max_memories
        self.min_score = min_score
        self.max_words = max_words

    # ------------------------------------------------------------------ memories
    def candidates(self, turns: Sequence[Turn], *, peer: bool | None = None) -> list[Candidate]:
        """The memories in ``turns``: scored sentences, then joined — a cause with the fix said right after it, a
        decision with its reason (said next to it, just before it, or in the neighbouring message). ``peer``:
        said between people, not to an assistant (by default, read from ``turns``: see :func:`between_people`)."""
        items: list[Said] = []
        errors: list[tuple[int, str]] = []
        # between people (named users, no assistant) a sentence about the listener is no memory of either
        peer = between_people(turns) if peer is None else peer
        for ti, t in enumerate(turns):
            if t.role == "tool_result":
                errors.extend((ti, e) for e in error_lines(t.text)[-1:])
            elif t.role in ("user", "assistant"):
                for sent in self._sentences(t, peer):
                    cut = _beyond_listener(sent)  # joins and reasons see the sentence without it, too
                    items.append(Said(cut or sent, ti, t, self._score(cut, t.role, t.speaker, peer) if cut else None))
        confirmed_fix_lessons(items, split_sentences, 0.85)  # report / reply / "that fixed it": one lesson
        self._correct_across_turns(items)
        self._join_in_turns(items)
        problem_before_cause(items, self._join)  # "X kept failing. turns out Y. Z fixed it": one lesson
        self._join_across_turns(items)
        if not peer:
            picked_options(items)  # "2" after the assistant's numbered options: the option, chosen
            accepted_proposals(items)  # "agreed, do that" after the assistant proposed a change
            named_choices(items)  # "Flyway, with plain SQL files." after "Flyway or Liquibase?"
        for ti in [] if peer else unread_user_turns(items, turns):  # a message no pattern read may say one thing
            whole = None if answered(turns, ti) else whole_message(turns[ti].text, turns[ti].speaker)
            if whole is None:
                continue  # (what the assistant answered at length was a question or a report: the answer tells)
            first = next((it for it in items if it.ti == ti), None)
            if first is None:  # no sentence of it was scored at all
                first = Said(turns[ti].text, ti, turns[ti], None)
                items.insert(next((k for k, it in enumerate(items) if it.ti > ti), len(items)), first)
            first.cand, first.score = whole, WHOLE_SCORE
        taken_back(items)  # "scrap GraphQL, v2 stays REST": the earlier "let's do GraphQL" is no decision now
        listed_under_headers(items)  # bullets under "House rules for SQL:" are rules, under "Team sync outcome:" decisions
        if not peer:
            sharpen_facts(items)  # a one-sentence message a pattern read as a fact may read as a rule or choice
        out: list[tuple[float, int, Candidate]] = []
        seen: set[str] = set()
        for order, it in enumerate(items):
            if it.consumed or it.cand is None:
                continue
            c = it.cand
            c.sources = list(dict.fromkeys(t.id for t in it.turns if t.id))
            times = [t.at for t in it.turns if t.at is not None]
            c.occurred_at = max(times) if times else None
            if c.kind == "lesson":
                _attach_error(c, it.ti, errors)
            key = normalize_text(c.text)
            if key in seen or not admit(c.text) or not _substantive(c.text):
                continue
            seen.add(key)
            out.append((it.score, order, c))
        best = sorted(out, key=lambda x: -x[0])[: self.max_memories]
        return [c for _, _, c in sorted(best, key=lambda x: x[1])]

    def _sentences(self, t: Turn, peer: bool = False) -> list[str]:
        """Sentences; a user's are also split into clauses ("I'm vegan and I hate cilantro"), unless only one clause
        says something and the whole is a decision, lesson or preference (the other clause is its reason: "X is too
        slow, so we'll use Y")."""
        sents: list[str] = []
        for x in split_sentences(t.text.translate(QUOTES)):
            rest = _DONE_LEAD_RE.sub("", x)
            x = rest if STATUS_RE.search(rest) is None else x  # "Done: the move to Fly.io finished on Saturday"
            if STATUS_RE.search(x) and not PROBLEM_RE.search(x):  # "tests pass locally but fail in CI" reports
                continue
            if sents and CORRECTION_LEAD_RE.match(x):  # "X listens on 8080. Correction: it's 8443 now": one memory,
                sents[-1] = f"{sents[-1]} {x}"           # the correction read with what it corrects
            else:
                sents.append(_capitalised(_HEADS_UP_RE.sub("", CORRECTION_LEAD_RE.sub("", x))))
        if t.role != "user":
            return sents
        out: list[str] = []
        for sent in sents:
            clauses = [c.strip(" ,;") for c in CLAUSE_RE.split(sent) if c.strip(" ,;")]
            for k in range(len(clauses) - 1, 0, -1):  # "(yesterday) my team and I used Go": one subject
                joined = f"{clauses[k - 1]} and {clauses[k]}"
                if _MY_X_END_RE.search(clauses[k - 1]) and joined in sent:
                    clauses[k - 1:k + 1] = [joined]
            said = sum(1 for c in clauses if self._says(c, peer)) if len(clauses) > 1 else 2
            whole = self._says(sent, peer) if said < 2 or DONE_RE.search(sent) or _PURPOSE_RE.search(sent) else None
            keep = whole is not None and ((whole[1].kind == "decision" and _PURPOSE_RE.search(sent) is not None)
                                          or whole[1].kind in ("decision", "lesson") and (said < 2 or whole[1].kind == "lesson"
                                                                                and DONE_RE.search(sent)) or whole[1].kind == "preference"
                                          and not any(re.match(r"(?i)(?:my|i|i'm|we|our)\b", c) for c in clauses[1:])
                                          or whole[1].kind == "fact" and all(  # "our clusters run EKS 1.29 and
                                              self._says(c, peer) or re.search(r"\d", c) for c in clauses))  # we use X"
            out.extend([sent] if keep else clauses)
        return out

    def _says(self, sentence: str, peer: bool = False) -> tuple[float, Candidate] | None:
        """A user's sentence or clause as :meth:`candidates` scores it: without what it says to the listener."""
        cut = _beyond_listener(sentence)
        return self._score(cut, "user", None, peer) if cut else None

    def _surface(self, sentence: str, role: str, speaker: str | None = None) -> str:
        """How a sentence reads as (part of) a memory: clipped, the user's in the third person (by name when the
        message named its speaker), ended."""
        text = clip_words(sentence, self.max_words)
        if role == "user":
            text = first_person_to_user(text, speaker)
        else:
            text = LEAD_RE.sub("", text).strip()
            text = text[:1].upper() + text[1:]
        return ended(text)

    def _score(self, sentence: str, role: str, speaker: str | None = None,
               peer: bool = False) -> tuple[float, Candidate] | None:
        from ...recall.lexical import identifiers

        words = sentence.split()
        if len(words) < (2 if role == "user" else 3) or VAGUE_OBJECT_RE.search(sentence) \
                or leans_on_context(sentence, peer=peer) or a_guess(sentence):
            return None
        idents = identifiers(sentence)
        concrete = bool(idents) or bool(re.search(r"\d|https?://|(?<=[\w,;:] )[A-Z][\w-]+", sentence))
        best: Pattern | None = None
        for pat in PATTERNS:
            if role in pat.roles and len(words) >= pat.min_words and (concrete or not pat.anchored) \
                    and pat.regex.search(sentence) and (best is None or pat.score > best.score):
                best = pat
        if role == "user" and len(words) >= 12 and (best is None or best.kind != "lesson") and told_whole(sentence):
            best = TOLD_LESSON  # what broke, why, what was done and that it holds, in one breath
        if best is None or (role == "assistant" and len(words) < 4 and not best.labelled) \
                or best.kind == "fact" and role == "user" and not peer and symptom_reported(sentence) \
                and not DONE_RE.search(sentence):  # "prod celery is throwing X again": a report, no fact
            return None
        kind = "decision" if best.kind == "fact" and role == "user" and _OPENS_CHOICE_RE.match(sentence) else best.kind
        score = best.score
        if QUESTION_RE.search(sentence):
            if kind in ("preference", "fact", "decision"):
                return None
            score -= 0.3
        if _REASON_RE.search(sentence):
            score += 0.1
        if idents:
            score += 0.05
        if len(words) > self.max_words:
            score -= 0.15
        if kind == "event" and not idents and len(words) < 8:
            return None  # "It worked." alone says nothing later; the summary keeps the outcome
        if score < self.min_score:
            return None
        text = self._surface(sentence, role, speaker)
        if not admit(text):
            return None
        tags = tuple(i for i in idents if len(i) <= 60)[:4]
        return score, Candidate(text=text, kind=kind, tags=tags, importance=DEFAULT_IMPORTANCE[kind],
                                metadata={"role": role})

    def _join(self, kind: str, first: "Said", second: "Said", glue: str = " ") -> None:
        """``first`` becomes one memory of ``kind`` saying both; ``second`` is consumed."""
        parts = [x.cand.text if x.cand is not None else self._surface(x.text, x.turn.role, x.turn.speaker)
                 for x in (first, second)]
        if glue != " ":  # a reason in the words it was given in
            raw = _REASON_PREFIX_RE.sub("", _AGREED_RE.sub("", LEAD_RE.sub("", _REASON_PREFIX_RE.sub(
                "", second.text))).strip())  # "Yes. fwiw the reason is ...": the reason
            parts[1] = ended(clip_words(raw[:1].upper() + raw[1:], self.max_words // 2))
        label = f"{first.turn.speaker or 'User'}: "
        if (second.turn.role, second.turn.speaker) == (first.turn.role, first.turn.speaker) \
                and parts[0].startswith(label) and parts[1].startswith(label):
            parts[1] = parts[1][len(label):]  # one speaker, named once: "maya: X. Fixed it by Y."
        text = parts[0] + glue + parts[1]
        old = first.cand or second.cand
        tags = tuple(dict.fromkeys([*(first.cand.tags if first.cand else ()),
                                    *(second.cand.tags if second.cand else ())]))[:4]
        first.cand = Candidate(text=text, kind=kind, tags=tags, importance=DEFAULT_IMPORTANCE[kind],
                               metadata=dict(old.metadata) if old else {"role": first.turn.role})
        first.extra = [*first.extra, second.turn, *second.extra]
        first.score = max(first.score, second.score, self.min_score) + 0.05
        second.consumed = True

    def _join_in_turns(self, items: list["Said"]) -> None:
        for i, it in enumerate(items):
            if it.consumed:
                continue
            prev = items[i - 1] if i > 0 and items[i - 1].ti == it.ti and not items[i - 1].consumed else None
            nxt = items[i + 1] if i + 1 < len(items) and items[i + 1].ti == it.ti else None
            kind = it.cand.kind if it.cand else None
            if FIX_RE.search(it.text) and prev is not None and is_cause(prev) and not (
                    kind == "decision" and DECISION_FIX_RE.search(it.text)):
                self._join("lesson", prev, it)
            elif kind == "decision" and nxt is not None and NOT_CHOSEN_RE.search(it.text) and nxt.cand is not None \
                    and nxt.cand.kind == "decision":
                self._join("decision", it, nxt)  # "we're NOT going with SQS after all. Going with MSK because ..."
            elif kind == "decision":
                clauses = plain_run(items, i + 1, it.ti)
                if nxt is not None and is_reason(nxt) and (REASON_LABEL_RE.match(nxt.text) or not nxt.cand or nxt.cand.kind
                                                             in ("fact", "event", "lesson") or NOT_WANTED_RE.match(nxt.text)):
                    self._join("decision", it, nxt)
                    for more in items[i + 2:i + 4]:  # "..., and I don't want another stateful thing to babysit"
                        if more.ti != it.ti or more.consumed or not NOT_WANTED_RE.match(more.text):
                            break
                        self._join("decision", it, more)
                elif len(clauses) > 1 and any(is_reason(x) for x in clauses):  # "The data is single-user and
                    for x in clauses:                                            # we don't want a DB server."
                        self._join("decision", it, x)
                elif prev is not None and is_reason(prev) and prev.cand is None and not REASON_HINT_RE.search(
                        it.cand.text):
                    self._join("decision", it, prev, glue=" Reason: ")
            elif kind == "preference" and prev is not None and _THATS_HOW_RE.match(it.text):
                self._join("preference", prev, it)  # "can you redo those as table-driven tests? that's how I want them"
            elif kind == "preference" and nxt is not None and nxt.cand is None and _NO_X_RE.match(it.text) \
                    and _INSTEAD_RE.match(nxt.text) and not QUESTION_RE.search(nxt.text):
                self._join("preference", it, nxt)  # "no ORMs please. Raw SQL through sqlx."
            elif kind == "lesson" and not FIX_RE.search(it.text) and nxt is not None and FIX_RE.search(nxt.text) \
                    and not QUESTION_RE.search(nxt.text):
                self._join("lesson", it, nxt)

    def _join_across_turns(self, items: list["Said"]) -> None:
        """A decision's reason in the message before it ("MySQL had replication issues." / "Then let's use
        Postgres.") or in an agreeing reply ("Yes — session mode would need 2,000 connections."); a lesson's
        fix opening the next message ("The flake was a race in the retry queue." / "Awaited the queue flush
        in conftest.")."""
        groups = turn_groups(items)
        for k, group in enumerate(groups):
            if k + 1 < len(groups):
                self._join_fix_from_next_turn(group, groups[k + 1])
            for it in group:
                if it.consumed or it.cand is None or it.cand.kind != "decision" or REASON_HINT_RE.search(
                        it.cand.text) and not AGREE_RE.match(it.text):  # "Agreed, ...": the argument agreed to
                    continue
                before = groups[k - 1] if k > 0 else []
                after = groups[k + 1] if k + 1 < len(groups) else []
                told = after  # the reason told next, or after the other side's question ("want me to start?")
                asked = after and after[0].turn.role != it.turn.role and any(x.text.rstrip().endswith("?")
                                                                             for x in after)
                if asked and k + 2 < len(groups):
                    told = groups[k + 2]
                why = asked and any(x.text.rstrip().endswith("?") and ASKED_WHY_RE.search(x.text) for x in after)
                if told and told[0].turn.role == it.turn.role and not QUESTION_RE.search(told[0].text) and (
                        REASON_LABEL_RE.match(told[0].text) or why and told is not after):
                    self._join("decision", it, told[0], glue=" Reason: ")  # "picking axum" / "reason is ..."
                    continue
                if THEN_RE.match(it.cand.text) and len(it.text.split()) <= 6 and any(
                        x.cand is not None and x.cand.kind == "decision" and not x.consumed
                        and content_words_of(x.text) & content_words_of(it.text) for x in before):
                    it.consumed = True  # "ok, integer cents it is": the decision argued just before, agreed to
                    continue
                if after and AGREE_RE.match(after[0].text) and any(is_reason(x) for x in after):
                    reply = after[0].turn
                    self._join("decision", it, Said(reply.text.translate(QUOTES), after[0].ti, reply, None),
                               glue=" Reason: ")
                    for x in after:
                        x.consumed = True
                    continue
                words = entities(it.cand.text)
                linked = [x for x in before if is_reason(x) and not x.consumed and (x.cand is None or x.cand.kind not in (
                              "fact", "preference", "event", "lesson"))  # a memory of its own stays one
                          and (THEN_RE.match(it.cand.text) or words & entities(x.text))]
                choice = CHOICE_RE.match(it.text)
                if choice:  # "pizza it is" answers an argument, or is no decision at all
                    linked = [x for x in linked if len(x.text.split()) >= 6]
                if linked:
                    self._join("decision", it, linked[-1], glue=" Reason: ")
                elif choice:
                    it.cand = None

    def _correct_across_turns(self, items: list["Said"]) -> None:
        """A user's message that opens by correcting the user's message before it ("the analytics warehouse is on
        Redshift" / "wait, my bad, we migrated that to Snowflake in Q1"): one memory of the corrected statement's
        kind, the correction read with what it corrects (as inside one message), and no memory of the old one."""
        for i, it in enumerate(items):
            if it.turn.role != "user" or it.consumed or i == 0 or items[i - 1].ti == it.ti \
                    or not CORRECTION_LEAD_RE.match(it.turn.text.translate(QUOTES).lstrip()):
                continue  # only the first sentence of a message that opens with a correction
            users = [x for x in items[:i] if x.turn.role == "user"]
            old = next((x for x in reversed(users) if x.ti == users[-1].ti and x.cand is not None
                        and not x.consumed), None) if users else None
            if old is None or old.cand is None or old.cand.kind not in ("fact", "preference", "event", "decision",
                                                                        "lesson"):
                continue
            said = self._surface(f"{old.text} Correction: {it.text}", "user", it.turn.speaker)
            it.cand = Candidate(text=said, kind=old.cand.kind, tags=old.cand.tags,
                                importance=DEFAULT_IMPORTANCE[old.cand.kind], metadata={"role": "user"})
            it.score, it.extra = max(it.score, old.score) + 0.05, [*it.extra, old.turn]
            old.consumed = True

    def _join_fix_from_next_turn(self, turn: list["Said"], after: list["Said"]) -> None:
        """The last cause of ``turn`` without its fix takes the fix that opens the next message, when both
        name the same thing (a reply about something else is no fix: "Regenerated the lock file." after "the
        index was fragmented")."""
        causes = [x for x in turn if not x.consumed and x.cand is not None and x.cand.kind == "lesson"
                  and not FIX_RE.search(x.text)]
        fix = next((x for x in after[:2] if not x.consumed and FIX_RE.search(x.text)
                    and not QUESTION_RE.search(x.text)), None)
        if causes and fix is not None and content_words_of(causes[-1].text) & content_words_of(fix.text) and not (
                fix.cand is not None and fix.cand.kind == "decision" and DECISION_FIX_RE.search(fix.text)):
            self._join("lesson", causes[-1], fix)

    # ------------------------------------------------------------------ summary
    summary_parts = staticmethod(summary_parts)
    merge_parts = staticmethod(merge_parts)
    render_summary = staticmethod(render_summary)

    def distill(self, turns: Sequence[Turn], *, context_turns: Sequence[Turn] | None = None,
                previous: Mapping[str, Any] | None = None) -> Distillation:
        """Candidates from ``turns`` (the new part of the session); the summary covers ``context_turns``
        (the whole session when known) merged with ``previous`` summary parts."""
        parts = self.summary_parts(context_turns if context_turns is not None else turns)
        if context_turns is None:
            parts = self.merge_parts(previous, parts)
        # a capture that continues a chat between people may hold one person's messages: the session decides
        peer = between_people(context_turns) if context_turns is not None else between_people(turns, part=True)
        return Distillation(candidates=self.candidates(turns, peer=peer), summary=self.render_summary(parts),
                            summary_metadata={"parts": parts})


__all__ = ["KeylessDistiller", "between_people", "split_sentences"]
