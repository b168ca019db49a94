"""Alembic's script directory for the database (``storage.migrate`` runs it; see ``env.py``).

Revisions live in ``versions/``, one file per named revision (``0001_roster_and_follows``):
the revision id is its file's name without ``.py``, at most 32 characters (Alembic's
``alembic_version`` column), and ``schema.HEAD`` names the newest. A revision's tables are
written out in it, never imported from ``storage.schema``: what a revision did must not change
when the code's tables do.
"""
