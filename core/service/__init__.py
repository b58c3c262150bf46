"""The local service: one owner process per embedded store, its client, wire format and lifecycle."""
