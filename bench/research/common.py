"""Shared LoCoMo loading / doc building / evaluation helpers for the retrieval research."""
import json, re
import numpy as np

DATA = "/work/shared/data/locomo10.json"


def load():
    """Return (convs, questions).

    convs: list of dicts {turns: [dict(dia_id, speaker, text, caption, session, date, idx)], ...}
    questions: list of dicts {conv, question, evidence(list of turn indices within conv), category}
    """
    raw = json.load(open(DATA))
    convs, qs = [], []
    for ci, c in enumerate(raw):
        conv = c["conversation"]
        turns = []
        sess_ids = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
        for s in sess_ids:
            date = conv.get(f"session_{s}_date_time", "")
            for t in conv[f"session_{s}"]:
                turns.append(dict(dia_id=t["dia_id"], speaker=t["speaker"], text=t["text"],
                                  caption=t.get("blip_caption") or "", session=s, date=date))
        pos = {t["dia_id"]: i for i, t in enumerate(turns)}
        for i, t in enumerate(turns):
            t["idx"] = i
        convs.append(dict(turns=turns, pos=pos, speakers=(conv["speaker_a"], conv["speaker_b"])))
        for q in c["qa"]:
            if q.get("category") not in (1, 2, 3, 4):
                continue
            ev = []
            for e in q.get("evidence", []):
                for a, b in re.findall(r"D:?(\d+):(\d+)", e):
                    part = f"D{int(a)}:{int(b)}"
                    if part in pos and pos[part] not in ev:
                        ev.append(pos[part])
            if not ev:
                continue
            qs.append(dict(conv=ci, question=q["question"], evidence=ev, category=q["category"]))
    return convs, qs


def turn_text(t):
    s = f"{t['speaker']}: {t['text']}"
    if t["caption"]:
        s += f" [shared an image: {t['caption']}]"
    return s


def doc_texts(convs, fmt="turn"):
    """Flat list of document texts over all conversations, in conv/turn order."""
    out = []
    for c in convs:
        T = c["turns"]
        for i, t in enumerate(T):
            if fmt == "turn":
                s = turn_text(t)
            elif fmt == "date":
                s = f"{t['date']}: " + turn_text(t)
            elif fmt == "date_end":
                s = turn_text(t) + f" ({t['date']})"
            elif fmt.startswith("win"):  # winN: N turns before and after in the same session
                n = int(fmt[3:] or 1)
                parts = []
                for j in range(i - n, i + n + 1):
                    if 0 <= j < len(T) and T[j]["session"] == t["session"]:
                        parts.append(turn_text(T[j]))
                s = " ".join(parts)
            elif fmt.startswith("ctx"):  # only the neighbours (no centre turn)
                n = int(fmt[3:] or 1)
                parts = []
                for j in range(i - n, i + n + 1):
                    if j != i and 0 <= j < len(T) and T[j]["session"] == t["session"]:
                        parts.append(turn_text(T[j]))
                s = " ".join(parts)
            else:
                raise ValueError(fmt)
            out.append(s)
    return out


def offsets(convs):
    off = [0]
    for c in convs:
        off.append(off[-1] + len(c["turns"]))
    return off


def metrics(rankings, qs, ks=(5, 10)):
    """rankings: list of arrays of turn indices (within conv), best first. Returns dict of overall and per-cat."""
    rows = []
    for r, q in zip(rankings, qs):
        ev = set(q["evidence"])
        r = list(r)
        rec = {k: len(ev & set(r[:k])) / len(ev) for k in ks}
        rr = 0.0
        for i, d in enumerate(r):
            if d in ev:
                rr = 1.0 / (i + 1)
                break
        rows.append((q["category"], rec[5], rec[10], rr))
    a = np.array(rows)
    out = {"all": a[:, 1:].mean(0)}
    for cat in (1, 2, 3, 4):
        m = a[:, 0] == cat
        out[cat] = a[m, 1:].mean(0)
    return out


def fmt_row(name, m):
    s = f"{name:<58} R@5 {m['all'][0]:.3f} R@10 {m['all'][1]:.3f} MRR {m['all'][2]:.3f} |"
    s += " ".join(f" c{c} {m[c][1]:.3f}" for c in (1, 2, 3, 4))
    return s
