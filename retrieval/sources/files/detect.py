"""Bibliographic files -> papers: recognise the format, read the file safely, dispatch.

Formats (``FORMATS``, one ``Reader`` each in ``formats.READERS``): BibTeX, JSON Lines of papers,
CSL-JSON, RIS, arXiv OAI-PMH ``oai_dc``, the arXiv metadata snapshot, and API responses saved as
files: an arXiv Atom feed (``arxiv-atom``), OpenAlex and Crossref works (single or lists,
Crossref with or without its envelope), Semantic Scholar papers and DBLP search answers. The
saved responses are read by ``saved_responses`` with the providers' parsers, so they yield the
same records as a fetch.

The format is recognised from the CONTENT (a ``.txt`` export of BibTeX is still BibTeX), by
each reader's rule (``sniff``); the file extension only breaks ties, e.g. a single JSON object
that could be a CSL item or a Paper record. Saved API responses are told apart by keys only
their API writes (``sniff.saved_api_format``), before the CSL/Paper/snapshot rules.

``parse_file`` reads plain or gzip-compressed files up to ``MAX_FILE_BYTES`` (decompressed),
decodes UTF-8 (with or without BOM), UTF-16 with BOM, or else Windows-1252/Latin-1 (old BibTeX
files), and refuses binary data. Every reader then stops at the file's entry and CPU-time budget
(``base.FileBudget``), saying so in one skipped item.

Only a file that is unusable as a whole raises ``ParseError`` (its message names the file and
says what to do); a malformed entry is skipped and reported in ``ParseOutcome.skipped``.
"""

from __future__ import annotations

import gzip
import stat
import zlib
from collections import Counter
from pathlib import Path

from retrieval.errors import ParseError
from retrieval.records.paper import Paper
from retrieval.sources.files.base import MAX_FILE_BYTES, ParseOutcome, reading_file
from retrieval.sources.files.formats import BY_NAME, READERS
from retrieval.sources.files.formats import FILE_FORMATS as FORMATS
from retrieval.sources.files.sniff import Head

_EXTENSIONS = {extension: reader.name for reader in READERS for extension in reader.extensions}


def _extension_format(filename: str | None) -> str | None:
    if not filename:
        return None
    suffixes = [s.lower() for s in Path(filename).suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    return _EXTENSIONS.get(suffixes[-1]) if suffixes else None


def detect_format(text: str, filename: str | None = None) -> str:
    """One of FORMATS: the reader whose rule (``sniff``) the start of the text meets, the file's
    extension breaking ties; an empty file, or a ``.bib`` with only comments, is what its
    extension says. ``ParseError`` (naming the file and the formats) when no rule is met."""
    hint = _extension_format(filename)
    head = Head.of(text, hint)
    found = next((reader.name for reader in READERS if reader.sniff(head)), None)
    if found:
        return found
    if hint is not None and not head.text:
        return hint  # an empty file: trust the extension
    if hint == "bibtex" and "@" not in head.text:
        return hint  # a .bib with only comments
    where = f"{filename}" if filename else "The text"
    raise ParseError(
        f"{where} is not in a format paperbot reads. Supported: BibTeX, JSON Lines of papers, "
        "CSL-JSON, RIS, arXiv OAI-PMH oai_dc XML, the arXiv metadata snapshot, and saved API "
        "responses (arXiv Atom feeds, OpenAlex, Crossref, Semantic Scholar and DBLP JSON). "
        f"If it is one of these, pass --format FMT, FMT one of: {', '.join(FORMATS)}.",
        source="files",
        item=filename or "",
    )


def parse_text(text: str, fmt: str | None = None, name: str = "<text>") -> ParseOutcome:
    """Parse text in ``fmt`` (detected when None); ``name`` appears in error messages."""
    if fmt is None:
        fmt = detect_format(text, None if name.startswith("<") else name)
    reader = BY_NAME.get(fmt)
    if reader is None:
        raise ParseError(
            f"Unknown format {fmt!r} for {name}; use one of: {', '.join(FORMATS)}.",
            source="files",
            item=name,
        )
    return reader.parse(text, name)


def _kind_of(mode: int) -> str:
    """What a file system entry that is not a regular file is, in words."""
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    return next((words for test, words in kinds if test(mode)), "not a regular file")


def _read_bytes(path: Path) -> bytes:
    limit = MAX_FILE_BYTES
    too_big = ParseError(
        f"{path} is larger than the {limit // (1024 * 1024)} MB limit for one file; "
        "split it into smaller files.",
        source="files",
        item=str(path),
    )
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):  # opening a named pipe with no writer would wait forever
            raise ParseError(f"{path} is {_kind_of(info.st_mode)}, not a file; paperbot reads regular files only. "
                             "Save the data to a file and ingest that.", source="files", item=str(path))
        if info.st_size > limit:
            raise too_big
        with path.open("rb") as handle:
            magic = handle.read(2)
            handle.seek(0)
            if magic == b"\x1f\x8b":
                with gzip.GzipFile(fileobj=handle) as unzipped:
                    data = unzipped.read(limit + 1)
            else:
                data = handle.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        if isinstance(exc, gzip.BadGzipFile | EOFError | zlib.error):
            reason = f"is a damaged gzip file ({exc})"
        else:
            reason = f"cannot be read ({exc.strerror or exc})"
        raise ParseError(
            f"{path} {reason}. Check the path and the file.", source="files", item=str(path)
        ) from exc
    if len(data) > limit:
        raise too_big
    return data


# Formats that are never bibliographies, by their first bytes (what `file` would say).
_BINARY_SIGNATURES = {
    b"%PDF-": "a PDF", b"PK\x03\x04": "a ZIP archive, such as a .docx or .xlsx", b"\x89PNG": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image", b"GIF8": "a GIF image", b"\x7fELF": "a program",
    b"\xd0\xcf\x11\xe0": "an old Office document", b"SQLite format 3": "an SQLite database",
}
_SNIFF_BYTES = 8192
_CONTROL_BYTES = bytes(set(range(32)) - {9, 10, 12, 13})  # tab, line feed, form feed, carriage return are text


def _looks_binary(data: bytes) -> str | None:
    """What the data is when it is not text ("a PDF", "binary data"), else None.

    A known signature decides; otherwise the first ``_SNIFF_BYTES``: text has few control
    characters, so a stray NUL in a BibTeX file is still text (its entries are read, the NUL
    removed with other control characters), while data with one control byte in ten is not.
    """
    for signature, what in _BINARY_SIGNATURES.items():
        if data.startswith(signature):
            return what
    head = data[:_SNIFF_BYTES]
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    return "binary data" if head and controls * 10 > len(head) else None


def decode_text(data: bytes, name: str) -> str:
    """Bytes -> text: UTF-8 (BOM optional), UTF-16 with BOM, else cp1252/Latin-1; never binary
    (``_looks_binary``)."""
    what = None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            pass
    elif (what := _looks_binary(data)) is None:
        for encoding in ("utf-8-sig", "cp1252", "latin-1"):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError:
                continue
    raise ParseError(
        f"{name} is not a text file (it looks like {what or 'binary data'}). "
        "Export the bibliography as text first (BibTeX, RIS, CSL-JSON or JSON Lines).",
        source="files",
        item=name,
    )


def read_text(path: Path) -> str:
    """The text of one file (``.gz`` too), read and decoded as ``parse_file`` reads it; raises
    ParseError for a file that is missing, too large, damaged or binary."""
    return decode_text(_read_bytes(Path(path)), str(path))


def parse_file(path: Path, fmt: str | None = None) -> ParseOutcome:
    """Read and parse one file (``.gz`` too); see the module docstring for what raises."""
    path = Path(path)
    text = read_text(path)
    if fmt is None:
        fmt = detect_format(text, path.name)
    file = str(path.resolve())
    with reading_file(file):
        outcome = parse_text(text, fmt, str(path))
    _keys_naming_one_item(outcome.papers, file)
    return outcome


def _keys_naming_one_item(papers: list[Paper], file: str) -> None:
    """Take ``file`` back from the entries naming it whose key several items of the file share (a
    CSL-JSON id repeated; BibTeX keeps a repeated key for the first entry only), in place: such a
    key names no single entry, so a later read of the file must not take one item for another's
    earlier version."""
    uses = Counter((entry.source, entry.source_id) for paper in papers for entry in paper.provenance if entry.file == file)
    shared = {key for key, count in uses.items() if count > 1}
    for paper in papers:
        if any(entry.file == file and (entry.source, entry.source_id) in shared for entry in paper.provenance):
            paper.provenance = [entry.model_copy(update={"file": None})
                                if entry.file == file and (entry.source, entry.source_id) in shared else entry
                                for entry in paper.provenance]
