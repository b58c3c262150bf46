"""Irregular word forms meet in BM25 recall: a question in the present finds what was said in the past tense
("when did I meet Jean?" -> "I met Jean"), on the real embedded store, BM25 only (no embedder to paper over it)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from remem import Memory, Scope
from remem.core.recall.lemmas import base_form, with_base_forms
from remem.core.recall.lexical import bm25_terms

SCOPE = Scope(tenant="acme", user="ana")


@pytest.mark.parametrize("word,base", [("met", "meet"), ("chose", "choose"), ("found", "find"), ("went", "go"),
                                       ("wrote", "write"), ("children", "child"), ("bought", "buy")])
def test_irregular_forms_get_their_base_form(word: str, base: str) -> None:
    assert base_form(word, bm25_terms) == base
    assert base_form(word.capitalize(), bm25_terms) == base


@pytest.mark.parametrize("word", ["painted", "painting", "tests", "postgres", "is", "qdrant", "better", "lit"])
def test_words_stemming_already_joins_get_nothing(word: str) -> None:
    """Regular inflections stem to the same term, stopwords index nothing, unknown words stay as they are, and
    base forms that say less than the word ("better" -> "good", "lit" -> "light") are not added."""
    assert base_form(word, bm25_terms) == ""


def test_base_forms_are_appended_once_and_text_is_kept() -> None:
    text = "We chose Postgres; Ana chose it too and met Jean."
    out = with_base_forms(text, bm25_terms)
    assert out.startswith(text)
    assert out[len(text):].split() == ["choose", "meet"]
    assert with_base_forms("All 48 tests pass", bm25_terms) == "All 48 tests pass"


@pytest.mark.parametrize("text", ["found_items = children_count", "the Men at Work album on Wi-Fi",
                                  "met" * 11])
def test_names_identifiers_and_long_runs_of_letters_get_no_base_forms(text: str) -> None:
    """A capitalised word inside a sentence is a name, a piece of an identifier is not a word, and a run of
    letters longer than a word is noise."""
    assert with_base_forms(text, bm25_terms) == text


def test_a_capitalised_word_starting_a_sentence_is_still_a_word() -> None:
    assert with_base_forms("Went to the gym. Met Jean there.", bm25_terms).split("\n")[1].split() == ["go", "meet"]


@pytest.mark.parametrize("said,other,question", [
    ("Ana: I met Jean at the climbing gym.", "Ana: Jean at the climbing gym is great.", "Where did Ana meet Jean?"),
    ("We chose Postgres for the orders service.", "Postgres for the orders service is slow.",
     "Did we choose Postgres for the orders service?"),
    ("Ana: I bought a steel road bike.", "Ana: a steel road bike is heavy.", "Which road bike did Ana buy?"),
])
def test_a_question_in_another_tense_finds_what_was_said(mem: Memory, said: str, other: str, question: str) -> None:
    """``other`` shares every word with ``said`` but the verb, and is shorter: stems alone rank it first."""
    mem.add_many([{"text": said}, {"text": other}], scope=SCOPE)  # the newer one wins a tie
    hits = mem.search(question, scope=SCOPE, limit=2)
    assert [h.record.text for h in hits] == [said, other]


def test_recall_never_loads_the_dictionary(store_factory, tmp_path) -> None:  # noqa: ANN001
    """Base forms are written with documents only, so a prompt's recall (a fresh hook process, no service) does
    not pay for loading the dictionary: it finds "I met Jean" by "meet" all the same."""
    path = store_factory("none")
    with Memory(path=path, embedder="none", service="off") as mem:
        mem.add("Ana: I met Jean at the climbing gym.", scope=SCOPE)
        mem.add("Ana: Jean at the climbing gym is great.", scope=SCOPE)  # all but the verb: wins without base forms
    probe = (
        "import sys\n"
        "from remem import Memory, Scope\n"
        f"with Memory(path={str(path)!r}, embedder='none', service='off') as mem:\n"
        "    hits = mem.search('Where did Ana meet Jean?', scope=Scope(tenant='acme', user='ana'))\n"
        "print(hits[0].record.text.startswith('Ana: I met'), 'simplemma' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "REMEM_HOME": str(tmp_path / "home")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"]


def test_a_store_written_before_base_forms_is_flagged_and_reembed_rewrites_it(store_factory, monkeypatch) -> None:  # noqa: ANN001
    """An upgraded store keeps working; `remem doctor` says its older memories miss base forms, and `reembed`
    rewrites their sparse vectors so "meet" finds "I met Jean"."""
    import json

    from remem.core import doctor
    from remem.core.recall import lexical

    path = store_factory("none")
    with monkeypatch.context() as old_remem:  # written by a remem without base forms
        old_remem.setattr(lexical, "with_base_forms", lambda text, terms: text)
        with Memory(path=path, embedder="none", service="off") as mem:
            mem.add("Ana: I met Jean at the climbing gym.", scope=SCOPE)
            mem.add("Ana: Jean at the climbing gym is great.", scope=SCOPE)
    meta_file = path / "remem.json"
    meta = json.loads(meta_file.read_text("utf-8"))
    assert meta["sparse"] >= 2  # a new store records its recipe ...
    meta.pop("sparse")  # ... an old one did not
    meta_file.write_text(json.dumps(meta), "utf-8")

    assert "reembed" in doctor.diagnose(path=path, embedder="none")["search index"]
    with Memory(path=path, embedder="none", service="off") as mem:
        assert mem.search("Where did Ana meet Jean?", scope=SCOPE)[0].record.text.startswith("Ana: Jean")
        mem.reembed()
        assert mem.search("Where did Ana meet Jean?", scope=SCOPE)[0].record.text.startswith("Ana: I met")
    assert "search index" not in doctor.diagnose(path=path, embedder="none")


@pytest.mark.parametrize("recorded", [None, [2], "x", True, 1])
def test_doctor_reads_any_index_recipe_without_failing(store_factory, recorded) -> None:  # noqa: ANN001
    import json

    from remem.core import doctor

    path = store_factory("none")
    meta_file = path / "remem.json"
    meta = {**json.loads(meta_file.read_text("utf-8")), "sparse": recorded}
    meta_file.write_text(json.dumps(meta), "utf-8")
    report = doctor.diagnose(path=path, embedder="none")
    assert report["store embedder"].startswith("none") and "reembed" in report["search index"], report
