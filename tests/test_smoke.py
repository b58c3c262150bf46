import os
import subprocess
import sys
from pathlib import Path

from remem import Memory, Scope


def test_add_then_search_finds_it(mem: Memory) -> None:
    s = Scope(tenant="acme", user="alice")
    rec = mem.add("Alice prefers green tea", scope=s, kind="preference")
    hits = mem.search("what tea does alice like", scope=s)
    assert hits and hits[0].record.id == rec.id


def test_the_readme_quickstart_runs_as_written(tmp_path: Path) -> None:
    """The README's first Python block, run as a user pastes it (in-process, on a fresh store): every call in it
    must work, and its comments must say what happens."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text("utf-8")
    code = readme.split("```python\n", 1)[1].split("```", 1)[0]
    code += ("\nassert hits[0].record.text == 'Alice prefers green tea'"
             "\nassert [h.record.text for h in mem.search('alice tea', scope=alice, as_of=rec.created_at)]"
             " == ['Alice prefers green tea']\nassert new.text == 'Alice switched to oolong'\nmem.close()\n")
    env = {**os.environ, "REMEM_HOME": str(tmp_path / "home"), "REMEM_SERVICE": "off"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Alice switched to oolong" in done.stdout
