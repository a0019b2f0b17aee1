"""The session: an append-only event log of a conversation and its durable runs, and the stores
it lives in (JSONL, SQLite, PostgreSQL). May import: contract."""
