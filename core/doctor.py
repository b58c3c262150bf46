"""``remem doctor``: what remem chose (store, embedder, service) and whether it works, without side effects.

It never starts the service and never opens a store another process owns: it reads the store's files and asks
a running service, so it is safe to run while agents are using the memory.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

from .scope import ALL_TENANTS


def diagnose(path: str | os.PathLike[str] | None = None, url: str | None = None,
             embedder: str | None = None) -> dict[str, Any]:
    """A flat report (strings, numbers, small dicts) for people and ``--json``."""
    from .. import __version__
    from .config import default_store_path, remem_home
    from .memory import expected_embedder_name, service_mode

    report: dict[str, Any] = {"remem": __version__, "python": sys.version.split()[0],
                              "platform": f"{platform.system()} {platform.machine()}", "home": str(remem_home())}
    try:
        report["embedder (configured)"] = expected_embedder_name(embedder) or str(embedder)
    except Exception as exc:  # noqa: BLE001 - a report, not a failure
        report["embedder (configured)"] = f"error: {exc}"
    from .providers.embedders import local_embedders

    report["local embedders installed"] = ", ".join(
        setting for setting, (_, available) in local_embedders().items() if available()) or "none"
    report["mcp installed"] = importlib.util.find_spec("mcp") is not None
    try:
        report["service mode"] = service_mode()
    except ValueError as exc:
        report["service mode"] = f"error: {exc}"
    report["service idle timeout (s)"] = os.environ.get("REMEM_SERVICE_IDLE") or "900"

    url = url or (os.environ.get("REMEM_URL") if path is None else None)
    if url:
        report.update(_server(url, embedder))
        return report

    from .service.client import service_status, store_folder

    folder = store_folder(path if path is not None else default_store_path())
    report["store"] = str(folder)
    meta_file = folder / "remem.json"
    if meta_file.exists():
        try:
            meta = json.loads(meta_file.read_text("utf-8"))
            report["store embedder"] = f"{meta.get('embedder')} (dim {meta.get('dim')})"
            want = expected_embedder_name(embedder, recorded=meta.get("embedder"))  # auto keeps the store's
            report["embedder (configured)"] = want or report.get("embedder (configured)")
            if want and meta.get("embedder") and want != meta.get("embedder"):
                report["warning"] = (f"the store was built with {meta.get('embedder')!r} but {want!r} is configured;"
                                     f" set REMEM_EMBEDDER or run `remem reembed`")
            report.update(_index_recipe(meta.get("sparse", 1)))
        except (OSError, ValueError) as exc:
            report["store embedder"] = f"unreadable: {exc}"
    else:
        report["store embedder"] = "no store yet (created on first use)"
    report["store size"] = _size(folder)
    report["permissions"] = _permissions(folder)
    from .store.backups import stale_backups

    stale = stale_backups(folder)
    if stale:
        report["backups"] = (f"{len(stale)} backup(s) taken before the last forget or edit still hold what it "
                             f"removed (e.g. {stale[0]}); `remem compact` replaces them with a fresh one")
    status = service_status(folder)
    report["service"] = status.pop("state")
    for key, value in status.items():
        if value is not None:
            report[f"service {key}"] = value
    if report["service"] == "running":
        try:
            from .service.client import ServiceClient

            st = ServiceClient(folder, autostart=False, timeout=5).call("stats", scope=ALL_TENANTS)
            report["memories"] = st.count
            report["pending embeddings"] = st.pending_embeddings
        except Exception as exc:  # noqa: BLE001
            report["memories"] = f"error: {exc}"
    return report


def _index_recipe(recorded: Any) -> dict[str, str]:
    """A note when the store's sparse vectors were written by an older recipe (see recall.indexing)."""
    from .recall.indexing import SPARSE_RECIPE

    if isinstance(recorded, bool) or not isinstance(recorded, (int, float)):
        return {"search index": f"unknown index recipe {recorded!r} in remem.json; `remem reembed` rewrites it"}
    if recorded < SPARSE_RECIPE:
        missing = ("word base forms (met/meet) or " if recorded < 2 else "") + \
            "what was said after them in a conversation"
        return {"search index": f"written by an older remem: memories stored before this version are not found by "
                                f"{missing}; `remem reembed` rewrites them"}
    return {}


def _permissions(folder: Path) -> str:
    """Whether another local account could read memories: anything of ours open to group/others (the store
    repairs it the next time it is opened; doctor itself changes nothing)."""
    from .config import refuse_foreign, remem_loose_paths

    try:
        refuse_foreign(folder)
    except PermissionError as exc:  # the store will not open: say why here too
        return f"refused: {exc}"
    loose = remem_loose_paths(folder)
    if not loose:
        return "private (folders 0700, files 0600)"
    shown = ", ".join(f"{p} ({_mode(p)})" for p in loose[:3])
    more = f" and {len(loose) - 3} more" if len(loose) > 3 else ""
    return (f"{len(loose)} path(s) readable by other accounts: {shown}{more}; tightened the next time the store "
            f"is opened (or run `chmod -R go-rwx` on them)")


def _mode(path: Path) -> str:
    try:
        return f"{path.lstat().st_mode & 0o777:03o}"
    except OSError:
        return "gone"


def _server(url: str, embedder: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"store": url, "backend": "qdrant server" if url != ":memory:" else "qdrant local",
                           "service": "not needed (a Qdrant server is multi-process)"}
    try:
        from .memory import Memory

        with Memory(url=url, embedder=embedder) as mem:
            out["memories"] = mem.stats(scope=ALL_TENANTS).count
    except Exception as exc:  # noqa: BLE001
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


def _size(folder: Path) -> str:
    if not folder.exists():
        return "0 B"
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                st = (Path(root) / name).stat()
                total += getattr(st, "st_blocks", 0) * 512 or st.st_size  # on disk (WAL files are sparse)
            except OSError:
                pass
    for unit in ("B", "KB", "MB", "GB"):
        if total < 1024 or unit == "GB":
            return f"{total:.0f} {unit}" if unit == "B" else f"{total:.1f} {unit}"
        total /= 1024  # type: ignore[assignment]
    return f"{total} B"
