"""Redaction: secrets and PII removed before anything is stored or sent.

``redactor`` (the :class:`Redactor`, ``configured(pii)``), ``ruleset`` (rule order + keyword prefilter),
``gitleaks`` (the vendored gitleaks rule set, ``data/``; refreshed by ``refresh_rules``), ``re2`` (RE2 -> ``re``),
``rules`` / ``assignments`` / ``chat`` (remem's own overlay), ``pii``, ``prefix`` (literal starts).
Re-scanning a store with new rules is the store's job (``remem.core.store.rescan``): redaction knows no store.
"""
