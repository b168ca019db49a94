"""Fixtures of the storage tests: the real arXiv sample records the index tests use too."""

from tests.index.conftest import arxiv_papers, arxiv_rows

__all__ = ["arxiv_papers", "arxiv_rows"]  # pytest fixtures, found here by name
