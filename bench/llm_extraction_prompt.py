"""What asking the LLM distiller for entities and relations costs in prompt tokens, per extraction call.

The same run's baseline is the extraction prompt without them: the system prompt without its entities paragraph,
the schema without the ``entities``/``relations`` properties. Both are counted with remem's ``count_tokens``
(tiktoken) on the request the distiller builds for every LoCoMo session (``render_transcript``, as sent): the
system prompt, the user message and the schema as JSON (a provider encodes a schema its own way: that column
is an estimate; the rest is what the model reads). No model is called: the reply's size depends on the model.

    python -m remem.bench.llm_extraction_prompt [--data /work/shared/data/locomo10.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
from typing import Any

from rich.console import Console
from rich.table import Table

from remem.core.distill import llm_distiller
from remem.core.distill.conversation import conversation_turns
from remem.core.recall.tokens import count_tokens

DEFAULT_DATA = "/work/shared/data/locomo10.json"


def without_entities() -> tuple[str, dict[str, Any]]:
    """The extraction system prompt and schema as they were before entities and relations were asked for."""
    system = llm_distiller._EXTRACT_SYSTEM
    start, end = system.index("Per memory, `entities`"), system.index("Also write `summary`")
    schema = copy.deepcopy(llm_distiller.EXTRACT_SCHEMA)
    item = schema["properties"]["memories"]["items"]
    item["required"] = [k for k in item["required"] if k not in ("entities", "relations")]
    for k in ("entities", "relations"):
        item["properties"].pop(k)
    return system[:start] + system[end:], schema


def sessions(path: str) -> list[list[dict[str, str]]]:
    out = []
    for conv in json.load(open(path, encoding="utf-8")):
        c = conv["conversation"]
        for key in sorted((k for k in c if k.startswith("session_") and not k.endswith("date_time")),
                          key=lambda k: int(k.split("_")[1])):
            said = c[key]
            if said:
                out.append([{"role": "user" if i % 2 == 0 else "assistant", "content": f"{m['speaker']}: {m['text']}"}
                            for i, m in enumerate(said)])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    args = ap.parse_args()
    distiller = llm_distiller.LLMDistiller(model="count-only", api_key="unused")
    old_system, old_schema = without_entities()
    variants = {"without entities (baseline)": (old_system, old_schema),
                "with entities + relations": (llm_distiller._EXTRACT_SYSTEM, llm_distiller.EXTRACT_SCHEMA)}
    users = [count_tokens(distiller.extract_messages(conversation_turns(s), None)[1]["content"])
             for s in sessions(args.data)]
    table = Table(title=f"extraction prompt tokens per call ({len(users)} LoCoMo sessions)")
    for col in ("prompt", "system", "schema (JSON, est.)", "fixed", "request median", "request p90", "ratio"):
        table.add_column(col, justify="right" if col != "prompt" else "left")
    base = None
    for name, (system, schema) in variants.items():
        fixed = count_tokens(system) + count_tokens(json.dumps(schema))
        totals = sorted(fixed + u for u in users)
        med = statistics.median(totals)
        base = base or med
        table.add_row(name, str(count_tokens(system)), str(count_tokens(json.dumps(schema))), str(fixed),
                      f"{med:.0f}", str(totals[int(len(totals) * 0.9)]), f"{med / base:.2f}")
    Console().print(table)


if __name__ == "__main__":
    main()
