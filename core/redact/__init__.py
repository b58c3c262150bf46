"""Redaction: secrets and PII removed before anything is stored or sent (rules as data, the redactor, re-scans)."""
