"""The named revisions of the database schema, oldest first by ``down_revision``."""
