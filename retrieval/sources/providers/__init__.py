"""One module per metadata provider: how its work objects become papers.

Each module (``arxiv``, ``openalex``, ``crossref``, ``semantic_scholar``, ``dblp``) exposes a
public ``read_work`` (``read_entry`` for arXiv's XML) from one raw item to a ``ParseOutcome``:
the paper, or why the item was skipped, and the values dropped, as a value. The API clients
(``sources.apis``) and the saved-response reader (``sources.files.saved_responses``) both use it,
so a fetched and a saved answer give the same records.
"""
