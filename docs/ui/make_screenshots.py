"""Screenshots of the inspector's main pages at 1280x800, from a realistic sample store.

    .venv/bin/python docs/ui/make_screenshots.py      # writes docs/ui/*.png

Seeds a temporary $REMEM_HOME with three projects' memories (120 days of them, supersede chains, duplicates,
junk), hook recall records and a day of hook log lines, then drives the system's headless Chromium.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ["REMEM_SERVICE"] = "off"
HERE = Path(__file__).resolve().parent

SHOP = "/home/dev/src/webshop"
INFRA = "/home/dev/src/infra"
FACTS = {
    SHOP: [
        ("decision", "Checkout uses Stripe Payment Intents; the old Charges API code path is gone since v2.3.", ["payments"]),
        ("decision", "Product search moved from Elasticsearch to Postgres full-text search (tsvector + GIN index).", ["search", "postgres"]),
        ("lesson", "Run `make migrate` before the integration tests, or the fixtures fail with a missing column.", ["tests"]),
        ("preference", "Maya wants small PRs: one concern per pull request, with a screenshot for UI changes.", ["review"]),
        ("fact", "The staging database is a nightly anonymised copy of production (emails and addresses scrambled).", ["staging"]),
        ("fact", "Prices are stored as integer cents in `orders.total_cents`; never use floats for money here.", ["money"]),
        ("event", "2 March: checkout outage for 40 minutes after the Redis failover; sessions were lost.", ["incident"]),
        ("lesson", "The CSS build breaks if Node is newer than 20; use `nvm use` in the repo root first.", ["build"]),
        ("decision", "Feature flags live in Unleash; every flag needs an owner and an expiry date in its description.", ["flags"]),
        ("preference", "Tests are written with pytest and factory_boy; no unittest classes in new code.", ["tests"]),
        ("fact", "Image uploads go to the `shop-media` S3 bucket through presigned URLs valid for 10 minutes.", ["storage"]),
        ("note", "TODO: the cart badge count is cached for 60 s and shows stale numbers after a purchase.", ["open", "cart"]),
        ("summary", "Session: migrated the product search to Postgres FTS, added a GIN index, kept the old endpoint "
                    "behind a flag for a week, and wrote a rollback note in docs/search.md.", ["search"]),
    ],
    INFRA: [
        ("decision", "Kubernetes clusters are upgraded one minor version at a time, staging a week before production.", ["k8s"]),
        ("fact", "Terraform state lives in the `infra-tfstate` bucket with DynamoDB locking; never edit it by hand.", ["terraform"]),
        ("lesson", "cert-manager needs the DNS01 solver for wildcard certificates; HTTP01 silently never completes.", ["tls"]),
        ("preference", "Alerts page someone only for user-facing symptoms; everything else goes to the #infra channel.", ["alerts"]),
        ("event", "Production moved to eu-west-1 on 14 January; us-east-1 is kept as a cold standby.", ["region"]),
        ("fact", "Grafana dashboards are provisioned from `dashboards/*.json`; changes in the UI are overwritten.", ["grafana"]),
        ("decision", "Secrets come from External Secrets Operator backed by AWS Secrets Manager, not sealed-secrets.", ["secrets"]),
        ("note", "Open: the node autoscaler takes 6 minutes to add capacity during the Monday 9:00 peak.", ["open", "autoscaling"]),
    ],
    "acme-support-bot": [
        ("preference", "Customer Ana Souza prefers answers in Portuguese and by email rather than chat.", ["customer"]),
        ("fact", "Acme's enterprise plan includes SSO with Okta and a 99.9% uptime SLA.", ["plans"]),
        ("fact", "Refunds over 500 EUR need a second approval from the finance team.", ["refunds"]),
        ("lesson", "Ask for the order number first; searching by email finds the wrong account for shared inboxes.", ["support"]),
    ],
}
JUNK = ["ok", "thanks!", "lgtm", "see above"]
LONG = ("Release checklist for the webshop, as agreed in the retro: " + " ".join(
    f"step {i}: {w}" for i, w in enumerate(["freeze the main branch", "tag the release candidate", "run the full "
    "end-to-end suite against staging", "check the error budget", "announce the window in #releases", "deploy "
    "with the canary at 5%", "watch checkout conversion for 30 minutes", "promote to 100%", "unfreeze"], 1))
    + " — and a very long identifier to test wrapping: " + "webshop-release-checklist-" * 8)


AREAS = {
    SHOP: ["checkout", "the cart", "product search", "the admin panel", "order emails", "the payment webhook",
           "image uploads", "the CSV export", "coupon codes", "the sitemap"],
    INFRA: ["the ingress controller", "the staging cluster", "Terraform modules", "the backup job", "Grafana alerts",
            "the CI runners", "DNS records", "the VPN"],
    "acme-support-bot": ["refund requests", "SSO tickets", "invoice questions", "plan upgrades"],
}
ACTIONS = [
    ("event", "Fixed a bug in {a}: {x}.", ["bugfix"], ["the retry loop did not back off", "a missing index made it slow "
     "at month end", "timeouts were not logged", "it read week-old staging data"]),
    ("lesson", "When touching {a}, {x}.", ["lesson"], ["run the smoke test before merging", "add a regression test "
     "first", "ask Maya before changing the schema", "keep the public API unchanged"]),
    ("summary", "Session: worked on {a}; {x}.", [], ["added tests and put it behind a feature flag", "refactored the "
     "handler and updated the docs", "fixed two flaky tests"]),
    ("decision", "For {a} we agreed to {x}.", [], ["ship changes behind a feature flag", "keep timeouts at 30 seconds",
     "never log customer emails"]),
]


def seed(home: Path) -> None:
    from remem import Memory, Scope

    rng = random.Random(7)
    now = time.time()
    mem = Memory(path=home / "store", embedder="none")
    sessions = [f"sess-{i:02d}-{rng.randrange(16**6):06x}" for i in range(12)]
    sources = ["claude-code:stop", "claude-code:precompact", "mcp:remember", "cli"]
    for tenant, facts in FACTS.items():
        items = [(kind, text, tags) for kind, text, tags in facts]
        for area in AREAS[tenant]:
            for kind, template, tags, details in rng.sample(ACTIONS, 3):
                items.append((kind, template.format(a=area, x=rng.choice(details)), tags))
        for kind, text, tags in items:
            stored = now - rng.uniform(0, 120) * 86400
            mem.add(text, scope=Scope(tenant=tenant, session=rng.choice(sessions)), kind=kind, tags=tags,
                    importance=rng.randint(3, 9), source=rng.choice(sources), created_at=stored,
                    occurred_at=stored - rng.uniform(0, 3) * 86400 if kind == "event" else None,
                    sources=[f"msg-{rng.randrange(16**8):08x}" for _ in range(rng.randint(1, 3))])
    shop = Scope(tenant=SHOP, session=sessions[0])
    old = mem.add("The API rate limit is 100 requests per minute per key.", scope=shop, kind="fact", tags=["api"],
                  created_at=now - 90 * 86400, source="claude-code:stop", sources=["msg-3f9a21c0", "msg-3f9a21c7"])
    mid = mem.supersede(old.id, "The API rate limit is 300 requests per minute per key.", valid_from=now - 30 * 86400,
                        scope=shop)
    mem.supersede(mid.id, "The API rate limit is 600 requests per minute per key (raised for the Black Friday sale).",
                  scope=shop)
    mem.add(LONG, scope=shop, kind="decision", tags=["release", "checklist", "very-long-tag-" * 3], importance=8,
            created_at=now - 3600)
    for text in JUNK:
        mem.add(text, scope=shop, kind="note", created_at=now - rng.uniform(1, 20) * 86400, source="claude-code:stop")
    dup = "Use ruff for linting and formatting; black is no longer used in this repo."
    for i in range(3):
        mem.add(dup if i == 0 else dup.replace("this repo", "this repository"), scope=shop,
                kind="preference", created_at=now - (50 + i) * 86400, dedupe=False)
    mem.add("The support inbox is triaged every morning at 9:00 CET.", kind="fact")
    mem.context("how do we handle money and prices in orders?", scope=Scope(tenant=SHOP))  # a few recalls
    mem.close()
    hooks = home / "hooks" / "last_recall"
    hooks.mkdir(parents=True)
    recalls = [(SHOP, "how should I store the price of an order line?", 18), (INFRA, "upgrade the cluster to 1.31", 2),
               ("acme-support-bot", "customer asks about refund of 750 EUR", 7)]
    mem = Memory(path=home / "store", embedder="none")
    from remem.ui.actions import recall_preview  # the hook's own selection and rendering

    for i, (tenant, prompt, minutes) in enumerate(recalls):
        preview = recall_preview(mem, prompt, Scope(tenant=tenant))
        context = preview.injected.split("\n", 1)[1] if preview.injected else ""
        data = {"tenant": tenant, "session": sessions[i], "at": now - minutes * 60, "status": "ok",
                "memories": len(preview.injected_ids), "context": context,
                "ms": round(rng.uniform(180, 420), 1)}
        (hooks / f"{tenant.strip('/').replace('/', '_')}.json").write_text(json.dumps(data))
    mem.close()
    logs = home / "logs"
    logs.mkdir()
    with open(logs / "hooks.log", "w") as fh:
        for _ in range(140):
            ts = now - rng.uniform(0, 86400)
            ms = rng.lognormvariate(5.6, 0.25)
            fh.write(json.dumps({"ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(ts)), "pid": 1,
                                 "event": "recall", "msg": rng.choice(["injected", "injected", "no matching memories"]),
                                 "ms": round(ms, 1)}) + "\n")


def main() -> int:
    home = Path(tempfile.mkdtemp(prefix="remem-shots-"))
    os.environ["REMEM_HOME"] = str(home)
    seed(home)
    from remem import Memory
    from remem.ui import Inspector
    from remem.ui.headless import Browser

    mem = Memory(path=home / "store", embedder="none")
    shop = SHOP
    rate = next(r for r in mem.list(scope={"tenant": shop}, limit=400) if "100 requests" in r.text)
    from urllib.parse import urlencode

    now = _dt.datetime.now(_dt.timezone.utc)
    story = [(110, "Maya Chen maintains the checkout service."),
             (95, "The checkout service uses Stripe Payment Intents for card payments."),
             (80, "The checkout service reads its sessions from Redis."),
             (20, "Tomás Silva joined Maya Chen on the checkout service on-call rota."),
             (5, "Ticket SHOP-231: the checkout service charged two orders twice; fixed in v2.4.")]
    told = {text: mem.add(text, scope={"tenant": shop}, created_at=now - _dt.timedelta(days=ago))
            for ago, text in story}
    mem.supersede(told["The checkout service reads its sessions from Redis."].id,
                  "The checkout service moved its sessions to Postgres after the Redis failover.",
                  scope={"tenant": shop}, valid_from=now - _dt.timedelta(days=40))
    hub = mem.about("the checkout service", scope={"tenant": shop}).entity
    pages = {
        "tenants": "/",
        "memories": f"/memories?t={shop}",
        "entities": f"/entities?t={shop}",
        "entity": f"/entity?t={shop}&{urlencode({'name': hub.name, 'kind': hub.kind})}",
        "detail": f"/memory/{rate.id}",
        "recall": f"/search?t={shop}&q=how+should+I+store+the+price+of+an+order+line%3F",
        "hook-recalls": "/recalls",
        "audit": f"/audit?t={shop}",
    }
    from urllib.parse import quote

    with Inspector(mem) as ins, Browser() as browser:
        d = browser.driver
        d.get(ins.url)
        time.sleep(0.5)
        ins.app.state.inspector.jobs.audit(shop).start()
        ins.app.state.inspector.jobs.join(60)
        for name, path in pages.items():
            url = ins.base + path.replace(shop, quote(shop, safe=""))
            d.get(url)
            d.save_screenshot(str(HERE / f"{name}.png"))
            print(f"docs/ui/{name}.png  {url.split('?')[0]}")
    mem.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
