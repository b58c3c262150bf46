"""Time in questions and in what was said: "in May 2023", "last week", "before the migration", "yesterday".

Two jobs, both deterministic and offline:

* :func:`parse_timeframe` reads the time a *question* names into a :class:`TimeFrame` — a window of event time
  (``occurred_at``), open on one side for "before ..." / "since ...", or an anchor event to look up ("before the
  migration": the window ends when the migration happened). Recall then filters or boosts by it
  (:func:`fuse`, :func:`resolve_anchor`); records without an event time are never filtered out.
* :func:`mentions` resolves the relative times a *message* uses against when it was said ("yesterday" said on
  8 May 2023 is 7 May 2023), so rendering can say the date a reader would otherwise have to work out.

Months without a year ("in October") mean the latest such month up to ``now``; bare weekdays are not read
as times (too ambiguous in questions), "last Friday" is.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, replace
from typing import Callable, Literal, Sequence

from ..types import MemoryRecord, SearchHit

UTC = _dt.timezone.utc
MONTHS = {m: i for i, m in enumerate(["january", "february", "march", "april", "may", "june", "july", "august",
                                      "september", "october", "november", "december"], 1)}
MONTHS.update({m[:3]: i for m, i in list(MONTHS.items())})
MONTHS["sept"] = 9
WEEKDAYS = {d: i for i, d in enumerate(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])}
NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
           "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3,
           "several": 3}
SEASONS = {"spring": (3, 6), "summer": (6, 9), "autumn": (9, 12), "fall": (9, 12), "winter": (12, 15)}
TIME_BOOST = 0.2  # in-window hits score x1.2: a nudge, not a filter (LoCoMo: 0.2 > 0.5 > 1.0)

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_NUM = r"(?P<n>\d+|" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + r")"
_UNIT = r"(?P<unit>day|week|month|year|weekend)s?"
_PART = r"(?:(?P<part>early|mid|late|the (?:beginning|start|middle|end) of|beginning of|start of|end of|" \
        r"middle of)[\s-]+)?"
_WEEKDAY = r"(?P<weekday>" + "|".join(WEEKDAYS) + r")"


@dataclass(frozen=True)
class TimeFrame:
    """A window of event time ``[start, end)`` (either side may be open), the words that named it, and, for
    "before/after <event>", the ``anchor`` phrase whose time is still to be looked up."""

    start: _dt.datetime | None
    end: _dt.datetime | None
    phrase: str
    relation: Literal["in", "before", "after"] = "in"
    anchor: str | None = None
    anchor_ids: tuple[str, ...] = ()  # the records the anchor was found in, once it is looked up

    @property
    def resolved(self) -> bool:
        return self.anchor is None and (self.start is not None or self.end is not None)

    def contains(self, when: _dt.datetime | None) -> bool:
        if when is None or not self.resolved:
            return False
        return (self.start is None or when >= self.start) and (self.end is None or when < self.end)

    def overlaps(self, start: _dt.datetime, end: _dt.datetime) -> bool:
        if not self.resolved:
            return False
        return (self.start is None or end > self.start) and (self.end is None or start < self.end)

    def matches(self, rec: "MemoryRecord") -> bool:
        """Whether a record is about this window: said in it, or naming a time in it ("yesterday", said the day
        after)."""
        if self.contains(rec.occurred_at):
            return True
        return any(self.overlaps(m.start, m.end) for m in mentions(rec.text, rec.occurred_at))

    def padded(self, days: int) -> "TimeFrame":
        """The window widened on its closed sides (a day named in a question is often the day before or after
        the conversation that told of it)."""
        pad = _dt.timedelta(days=days)
        try:
            return replace(self, start=self.start - pad if self.start else None,
                           end=self.end + pad if self.end else None)
        except OverflowError:  # at the calendar's edge: as it is
            return self

    def where(self) -> dict[str, dict[str, _dt.datetime]]:
        """The ``where=`` filter of this window (records with an event time inside it)."""
        bounds: dict[str, _dt.datetime] = {}
        if self.start is not None:
            bounds["$gte"] = self.start
        if self.end is not None:
            bounds["$lt"] = self.end
        return {"occurred_at": bounds}


@dataclass(frozen=True)
class Mention:
    """A relative time in a message, resolved against when it was said."""

    phrase: str
    start: _dt.datetime
    end: _dt.datetime

    def describe(self) -> str:
        """The resolved date in words a reader can use directly: a day, a range of days, a month, a year."""
        days = (self.end - self.start).days
        last = self.end - _dt.timedelta(days=1)
        if days <= 1:
            return self.start.strftime("%Y-%m-%d")
        if days <= 7:
            return f"{self.start:%Y-%m-%d} to {last:%Y-%m-%d}"
        if self.start.day == 1 and self.end.day == 1 and days <= 31:
            return self.start.strftime("%B %Y")
        if self.start.month == 1 and self.start.day == 1 and days in (365, 366):
            return self.start.strftime("%Y")
        return f"{self.start:%Y-%m-%d} to {last:%Y-%m-%d}"


# ---------------------------------------------------------------------------------------------- calendar
def _day(d: _dt.date) -> _dt.datetime:
    return _dt.datetime(d.year, d.month, d.day, tzinfo=UTC)


def _month_start(year: int, month: int) -> _dt.datetime:
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    return _dt.datetime(year, month, 1, tzinfo=UTC)


def _month(year: int, month: int, part: str | None = None) -> tuple[_dt.datetime, _dt.datetime]:
    start, end = _month_start(year, month), _month_start(year, month + 1)
    return _part(start, end, part)


def _part(start: _dt.datetime, end: _dt.datetime, part: str | None) -> tuple[_dt.datetime, _dt.datetime]:
    """Early / mid / late (or the beginning / middle / end) of a window: its thirds."""
    if not part:
        return start, end
    third = _dt.timedelta(days=round((end - start).days / 3))
    word = part.split()[-2] if part.endswith(" of") else part
    if word in ("early", "beginning", "start"):
        return start, start + third
    if word in ("mid", "middle"):
        return start + third, end - third
    return end - third, end


def _shift(when: _dt.datetime, n: int, unit: str) -> _dt.datetime:
    if unit == "day":
        return when - _dt.timedelta(days=n)
    if unit in ("week", "weekend"):  # "2 weekends ago": the weekend of the week two weeks back
        return when - _dt.timedelta(weeks=n)
    if unit == "month":
        m = when.month - n
        first = _month_start(when.year, m)
        return first.replace(day=min(when.day, 28))
    return when.replace(year=when.year - n, day=min(when.day, 28))


def _unit_window(when: _dt.datetime, unit: str) -> tuple[_dt.datetime, _dt.datetime]:
    """The calendar day / week (Monday first) / month / year containing ``when``."""
    day = _day(when.date())
    if unit == "day":
        return day, day + _dt.timedelta(days=1)
    if unit in ("week", "weekend"):
        start = day - _dt.timedelta(days=day.weekday())
        if unit == "weekend":
            return start + _dt.timedelta(days=5), start + _dt.timedelta(days=7)
        return start, start + _dt.timedelta(days=7)
    if unit == "month":
        return _month(when.year, when.month)
    return _dt.datetime(when.year, 1, 1, tzinfo=UTC), _dt.datetime(when.year + 1, 1, 1, tzinfo=UTC)


def _number(text: str) -> int:
    return int(text) if text.isdigit() else NUMBERS.get(text.lower(), 1)


# ---------------------------------------------------------------------------------------------- relative
_RELATIVE: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(?:the day before yesterday)\b", re.I), "day_before_yesterday"),
    (re.compile(r"\byesterday\b", re.I), "yesterday"),
    (re.compile(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b", re.I), "today"),
    (re.compile(r"\b(?:tomorrow)\b", re.I), "tomorrow"),
    (re.compile(r"\b" + _NUM + r"\s+" + _UNIT + r"\s+ago\b", re.I), "ago"),
    (re.compile(r"\b(?:in the |over the |during the |for the )?(?:past|last)\s+" + _NUM + r"\s+" + _UNIT + r"\b",
                re.I), "past_n"),
    (re.compile(r"\b(?P<which>last|this|next|this past)\s+" + _UNIT + r"\b", re.I), "which_unit"),
    (re.compile(r"\b(?P<which>last|this past|this|next)\s+" + _WEEKDAY + r"\b", re.I), "which_weekday"),
]


def _relative(kind: str, m: re.Match[str], now: _dt.datetime) -> tuple[_dt.datetime, _dt.datetime] | None:
    today = _day(now.date())
    one = _dt.timedelta(days=1)
    if kind == "day_before_yesterday":
        return today - 2 * one, today - one
    if kind == "yesterday":
        return today - one, today
    if kind == "today":
        return today, today + one
    if kind == "tomorrow":
        return today + one, today + 2 * one
    if kind == "ago":
        unit = m.group("unit").lower()
        return _unit_window(_shift(now, _number(m.group("n")), unit), unit)
    if kind == "past_n":
        unit = m.group("unit").lower()
        return _shift(today, _number(m.group("n")), unit), today + one
    if kind == "which_unit":
        unit, which = m.group("unit").lower(), m.group("which").lower()
        step = {"last": -1, "this past": -1, "this": 0, "next": 1}[which]
        if unit in ("day", "weekend") and unit == "day":
            return None
        anchor = now
        if unit in ("week", "weekend"):
            anchor = now + _dt.timedelta(weeks=step)
        elif unit == "month":
            anchor = _month_start(now.year, now.month + step)
        else:
            anchor = now.replace(year=now.year + step, day=min(now.day, 28))
        return _unit_window(anchor, unit)
    if kind == "which_weekday":
        target, which = WEEKDAYS[m.group("weekday").lower()], m.group("which").lower()
        delta = (today.weekday() - target) % 7
        if which in ("last", "this past"):
            day = today - _dt.timedelta(days=delta or 7)
        elif which == "next":
            day = today + _dt.timedelta(days=((target - today.weekday()) % 7) or 7)
        else:  # "this friday": the one in the current week
            day = today - _dt.timedelta(days=today.weekday()) + _dt.timedelta(days=target)
        return day, day + one
    return None


def mentions(text: str, said_at: _dt.datetime | None) -> list[Mention]:
    """The relative times in ``text`` ("yesterday", "last week", "two years ago", "last Sunday"), resolved
    against ``said_at`` (none without it)."""
    if said_at is None or not text:
        return []
    said_at = said_at if said_at.tzinfo else said_at.replace(tzinfo=UTC)
    out: list[Mention] = []
    taken: list[tuple[int, int]] = []
    for rx, kind in _RELATIVE:
        for m in rx.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            try:
                window = _relative(kind, m, said_at)
            except (ValueError, OverflowError):  # "3000 years ago": before the calendar's first year
                continue
            if window is not None:
                taken.append((m.start(), m.end()))
                out.append(Mention(m.group(0), *window))
    return sorted(out, key=lambda x: text.find(x.phrase))


# ---------------------------------------------------------------------------------------------- absolute
_ISO_RE = re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<m>[01]\d)(?:-(?P<d>[0-3]\d))?\b")
_DAY_MONTH_RE = re.compile(r"\b" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r"(?:,?\s+" + _YEAR + r")?\b", re.I)
_MONTH_DAY_RE = re.compile(r"\b" + _MONTH + r"\s+" + _DAY + r"(?:,?\s+" + _YEAR + r")?\b(?!\s*(?:%|am|pm|h\b))",
                           re.I)
_MONTH_YEAR_RE = re.compile(r"\b" + _PART + _MONTH + r"(?:\s+of)?,?\s+" + _YEAR + r"\b", re.I)
_MONTH_ONLY_RE = re.compile(r"\b(?:in|during|since|before|after|until|of|by|early|mid|late|last)[\s-]+" + _PART
                            + _MONTH + r"\b(?!\s+\d)", re.I)
_SEASON_RE = re.compile(r"\b(?:(?P<which>last|this|next)\s+)?(?P<season>spring|summer|autumn|fall|winter)"
                        r"(?:\s+(?:of\s+)?" + _YEAR + r")?\b", re.I)
_YEAR_RE = re.compile(r"\b" + _PART + r"(?:(?:in|during|since|before|after|until|by|of|from|the year)\s+)?"
                      + _YEAR + r"\b(?!\s*(?:[-/]\d|%|\w))", re.I)
_RELATION_RE = re.compile(r"\b(?P<rel>before|after|since|until|till|prior to|earlier than|later than|following|"
                          r"by the time of|ahead of)\s+(?P<rest>[^?.!;]+)", re.I)


def _month_number(word: str) -> int | None:
    return MONTHS.get(word.lower().rstrip("."))


def _valid_day(year: int, month: int, day: int) -> _dt.datetime | None:
    try:
        return _dt.datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None


def _latest_year(month: int, day: int, now: _dt.datetime) -> int:
    """The year of the latest ``month``/``day`` up to ``now`` (a date named without its year)."""
    probe = _valid_day(now.year, month, min(day, 28))
    return now.year if probe is not None and probe <= now else now.year - 1


def _absolute(text: str, now: _dt.datetime) -> tuple[tuple[_dt.datetime, _dt.datetime], str] | None:
    """The first absolute date / month / season / year named in ``text``: (window, phrase)."""
    found: list[tuple[int, tuple[_dt.datetime, _dt.datetime], str]] = []
    for m in _ISO_RE.finditer(text):
        y, mo = int(m.group("year")), int(m.group("m"))
        if m.group("d"):
            day = _valid_day(y, mo, int(m.group("d")))
            if day is not None:
                found.append((m.start(), (day, day + _dt.timedelta(days=1)), m.group(0)))
        elif 1 <= mo <= 12:
            found.append((m.start(), _month(y, mo), m.group(0)))
    for rx in (_DAY_MONTH_RE, _MONTH_DAY_RE):
        for m in rx.finditer(text):
            mo, d = _month_number(m.group("month")), int(m.group("day"))
            if mo is None or not 1 <= d <= 31:
                continue
            y = int(m.group("year")) if m.group("year") else _latest_year(mo, d, now)
            day = _valid_day(y, mo, d)
            if day is not None:
                found.append((m.start(), (day, day + _dt.timedelta(days=1)), m.group(0)))
    for m in _MONTH_YEAR_RE.finditer(text):
        mo = _month_number(m.group("month"))
        if mo is not None:
            found.append((m.start(), _month(int(m.group("year")), mo, m.group("part")), m.group(0)))
    for m in _MONTH_ONLY_RE.finditer(text):
        mo = _month_number(m.group("month"))
        if mo is None:
            continue
        y = _latest_year(mo, 1, now)
        found.append((m.start(), _month(y, mo, m.group("part")), m.group(0)))
    for m in _SEASON_RE.finditer(text):
        first, last = SEASONS[m.group("season").lower()]
        which = (m.group("which") or "").lower()
        if m.group("year"):
            y = int(m.group("year"))
        elif which:
            windows = [(_month_start(y, first), _month_start(y, last)) for y in range(now.year - 2, now.year + 2)]
            if which == "last":
                y = max(w[0].year for w in windows if w[1] <= now)
            elif which == "next":
                y = min(w[0].year for w in windows if w[0] > now)
            else:  # "this winter": the one under way, else the next
                y = next((w[0].year for w in windows if w[0] <= now < w[1]), None) or min(
                    w[0].year for w in windows if w[0] > now)
        else:
            continue
        found.append((m.start(), (_month_start(y, first), _month_start(y, last)), m.group(0)))
    for m in _YEAR_RE.finditer(text):
        y = int(m.group("year"))
        if any(s <= m.start("year") < s + len(p) for s, _, p in found):
            continue  # the year of a date already read
        start, end = _dt.datetime(y, 1, 1, tzinfo=UTC), _dt.datetime(y + 1, 1, 1, tzinfo=UTC)
        found.append((m.start(), _part(start, end, m.group("part")), m.group(0)))
    if not found:
        return None
    # the most specific reading at the earliest place: a day beats its month beats its year
    found.sort(key=lambda f: (f[0], f[1][1] - f[1][0]))
    pos, window, phrase = found[0]
    narrower = [f for f in found if f[0] <= pos + len(phrase) and f[1][1] - f[1][0] < window[1] - window[0]]
    if narrower:
        pos, window, phrase = narrower[0]
    return window, phrase.strip()


def _window(text: str, now: _dt.datetime) -> tuple[tuple[_dt.datetime, _dt.datetime], str] | None:
    got = _absolute(text, now)
    if got is not None:
        return got
    for m in (ms[0] for ms in (mentions(text, now),) if ms):
        return (m.start, m.end), m.phrase
    return None


_ANCHOR_STOP = re.compile(r"(?:,|\b(?:and|or|but|when|while|where|who|which|that|did|does|do|was|were|is|are)\b).*$", re.I)


def parse_timeframe(query: str, now: _dt.datetime | None = None) -> TimeFrame | None:
    """The time window a question names, or None (also for one past the calendar: "3000 years ago"). ``now``
    (default: the current time) anchors relative expressions ("last week") and dates without a year."""
    if not isinstance(query, str) or not query.strip():
        return None
    try:
        return _parse(query, now)
    except (ValueError, OverflowError):
        return None


def _parse(query: str, now: _dt.datetime | None) -> TimeFrame | None:
    now = now or _dt.datetime.now(UTC)
    now = now if now.tzinfo else now.replace(tzinfo=UTC)
    rel = _RELATION_RE.search(query)
    if rel is not None:
        word = rel.group("rel").lower()
        relation: Literal["before", "after"] = "before" if word in ("before", "until", "till", "prior to",
                                                                   "earlier than", "by the time of",
                                                                   "ahead of") else "after"
        rest = rel.group("rest")
        got = _window(rest, now) or _window("in " + rest, now)  # "before March": a month right after the word
        lead = ("in " + rest)[:max(0, ("in " + rest).lower().find(got[1].lower()))].split()[1:] if got else []
        if got is not None and len(lead) > 1 and lead[-1].lower() in ("on", "in", "at", "during"):
            return TimeFrame(*got[0], got[1])  # "after lunch on May 8": the day of the event named
        if got is not None and len(" ".join(lead)) <= 12:  # "before May 2023", "since last week"
            (start, end), phrase = got
            phrase = f"{rel.group('rel')} {re.sub(r'^in ', '', phrase)}"
            if relation == "before":
                return TimeFrame(None, start, phrase, "before")
            return TimeFrame(end if word in ("after", "later than", "following") else start, None, phrase, "after")
        anchor = _ANCHOR_STOP.sub("", rest).strip()
        words = anchor.split()
        if 1 <= len(words) <= 8 and not re.fullmatch(r"(?i)(?:it|that|this|then|now|them|him|her|me|you|us)",
                                                     anchor):
            return TimeFrame(None, None, f"{rel.group('rel')} {anchor}", relation, anchor=anchor)
    got = _window(query, now)
    if got is None:
        return None
    (start, end), phrase = got
    return TimeFrame(start, end, phrase)


# ---------------------------------------------------------------------------------------------- recall
def resolve_anchor(frame: TimeFrame, search: Callable[[str], Sequence[SearchHit]]) -> TimeFrame | None:
    """Turn "before/after <event>" into a window: ``search(anchor)`` finds the event; its event time bounds
    the window ("after": from the start of its day). None when the best match has no event time."""
    if frame.anchor is None:
        return frame
    for hit in search(frame.anchor)[:1]:  # the event is the best match, or unknown: not the next dated one
        when = hit.record.occurred_at
        if when is not None:
            found = (hit.record.id,)
            if frame.relation == "before":  # up to the event, not its day: the event itself is not the answer
                return replace(frame, start=None, end=when, anchor=None, anchor_ids=found)
            day = when.replace(hour=0, minute=0, second=0, microsecond=0)  # what followed is often told that day
            return replace(frame, start=day, end=None, anchor=None, anchor_ids=found)
    return None


def fuse(hits: Sequence[SearchHit], inside: Sequence[SearchHit], frame: TimeFrame | None,
         factor: float = TIME_BOOST, k: int = 5) -> list[SearchHit]:
    """One ranking from a search and the same question searched within ``frame`` (``inside``: what the
    unfiltered ranking may have left out): reciprocal-rank fusion of the two (the same constant as the engine's),
    then in-window hits boosted by ``1 + factor``."""
    fused: dict[str, float] = {}
    first: dict[str, SearchHit] = {}
    for ranking in (hits, inside):
        for rank, h in enumerate(ranking):
            fused[h.record.id] = fused.get(h.record.id, 0.0) + 1.0 / (k + rank + 1)
            first.setdefault(h.record.id, h)
    out = [replace(h, score=fused[i] * (1.0 + factor if frame is not None and frame.matches(h.record) else 1.0))
           for i, h in first.items()]
    return sorted(out, key=lambda h: h.score, reverse=True)


__all__ = ["Mention", "TIME_BOOST", "TimeFrame", "fuse", "mentions", "parse_timeframe", "resolve_anchor"]
