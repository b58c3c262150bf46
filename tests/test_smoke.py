from remem import Memory, Scope


def test_add_then_search_finds_it(mem: Memory) -> None:
    s = Scope(tenant="acme", user="alice")
    rec = mem.add("Alice prefers green tea", scope=s, kind="preference")
    hits = mem.search("what tea does alice like", scope=s)
    assert hits and hits[0].record.id == rec.id
