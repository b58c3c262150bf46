"""A LangGraph chat that remembers across threads, offline (no API key, no network).

Thread 1: the user tells the bot something about themselves. The checkpointer wrapper captures the turn into
remem in the background (``remember`` redacts and distils it). Thread 2, a new conversation: ``recall_node``
finds the relevant memory and the bot uses it. The "model" is a tiny rule-based function so the example runs
anywhere; swap in any LangChain chat model.

    python examples/langgraph_chat.py [--path /tmp/remem-chat-demo]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from typing import Any

os.environ.setdefault("REMEM_SERVICE", "off")  # a demo store opened in-process

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import Annotated, TypedDict

from remem import Memory, Scope
from remem.core.tooling import default_capture
from remem.integrations.langgraph import MemoryCaptureSaver, ScopeResolver, recall_node

WHO = ScopeResolver()  # each run's memories belong to config["configurable"]["user_id"]


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def offline_model(messages: list[AnyMessage]) -> AIMessage:
    """Stands in for a chat model: answers from the recalled memories when there are any."""
    recalled = [m.content for m in messages if isinstance(m, SystemMessage)]
    question = next(m.content for m in reversed(messages) if isinstance(m, HumanMessage))
    if recalled:
        lines = [ln[2:] for ln in recalled[-1].splitlines() if ln.startswith("- ")]
        return AIMessage(f"From what I remember ({'; '.join(lines)}), here is my answer to: {question}")
    return AIMessage(f"Noted. ({question})")


def build(mem: Memory) -> Any:
    graph = StateGraph(State)
    graph.add_node("recall", recall_node(mem, scope=WHO, token_budget=300))
    graph.add_node("chat", lambda state: {"messages": [offline_model(state["messages"])]})
    graph.add_edge(START, "recall")
    graph.add_edge("recall", "chat")
    graph.add_edge("chat", END)
    return graph.compile(checkpointer=MemoryCaptureSaver(InMemorySaver(), mem, scope=WHO))  # capture needs no graph change


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", help="the store folder (default: a temporary one, removed at the end; its local "
                        "service sees that and exits at once)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="remem-chat-") as folder:
        chat(args.path or os.path.join(folder, "store"))


def chat(path: str) -> None:
    with Memory(path=path, embedder="none") as mem:
        app = build(mem)
        user = {"user_id": "alice"}
        say = "I'm vegetarian and I'm allergic to peanuts. My sister Ana lives in Porto."
        out = app.invoke({"messages": [HumanMessage(say)]}, {"configurable": {**user, "thread_id": "monday"}})
        print("thread monday  >", say, "\n               <", out["messages"][-1].content)
        default_capture().flush(60)  # capture runs in the background; wait for it before the next thread
        print("\nremem now holds:")
        for rec in mem.list(scope=Scope(user="alice")):
            print("  -", rec.kind, "|", rec.text)
        ask = "Can you suggest a dinner recipe for when I visit my sister?"
        out = app.invoke({"messages": [HumanMessage(ask)]}, {"configurable": {**user, "thread_id": "friday"}})
        print("\nthread friday  >", ask, "\n               <", out["messages"][-1].content)


if __name__ == "__main__":
    main()
