"""Is a finished output whole?  Its recorded digest, else the structure of its format.

Run over the current config's outputs before each run (``locpriv.smk.remove_damaged``):
a truncated, overwritten or partly garbled file must not pass for a result.

Every job records the SHA-256 and size of each file it wrote (:func:`record_digests`, called
by ``locpriv.smk.logged`` when the job succeeds, under ``.snakemake/``): a file whose bytes
differ from its record is damaged, whatever changed in it (a structural check misses random
bytes in a small Parquet file's footer, whose key-value metadata no checksum covers; and
NetCDF-3 has no checksum at all).  A file without a record (written before records existed,
or taken from Snakemake's ``--cache``) gets its format's structural check, which reads the
structure rather than magic bytes:

* Parquet: the footer parses, every column chunk lies inside the file before the footer,
  and (up to :data:`FULL_READ_BYTES`) the file decodes whole with its page CRC-32
  checksums verified (``locpriv.io`` writes them), so 64 random bytes in a data page are
  found, not only a cut footer.
* NetCDF-3: the header parses and the file is exactly as long as its variables' data
  (the header states every variable's offset and size; NetCDF-3 has no checksum, so
  garbage inside the data is not detectable).
* PNG: every chunk's CRC-32 matches and the image ends with IEND.
* JSON parses; CSV (every writer here ends it with a newline) has that newline and the
  header's number of fields on every line.

A file is checked once per (size, mtime): :class:`Verified` remembers the files that
passed, so a run does not re-read a large result it has already checked.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import struct
import zlib
from pathlib import Path

# Parquet files up to this size are decoded whole (page checksums verified); larger ones get
# the footer and chunk-bounds check only (a 10^8-user points file would take minutes to decode)
FULL_READ_BYTES = 256 * 2**20
KINDS = (".parquet", ".nc", ".png", ".json", ".csv")
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DIGEST_DIR = ".snakemake/locpriv-digests"


def damage(path: str | os.PathLike, digest: dict | None = None) -> str | None:
    """Why ``path`` is not the file its job wrote (``digest``: :func:`recorded`) or, without a
    digest, not a whole file of its kind (by suffix); None when it is."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if digest:
            if size != digest["size"]:
                return f"{size} bytes where its job wrote {digest['size']}"
            return None if sha256(path) == digest["sha256"] else "its bytes differ from those its job wrote (SHA-256)"
        if size == 0:
            return "empty file"
        check = {".parquet": _parquet, ".nc": _netcdf, ".png": _png, ".json": _json, ".csv": _csv}.get(path.suffix)
        return check(path, size) if check else None
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"


def sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def digest_path(path: str) -> str:
    return os.path.join(DIGEST_DIR, hashlib.sha1(os.path.normpath(path).encode()).hexdigest())


def record_digests(outputs) -> None:
    """Record the size and SHA-256 of every file of a finished job's ``outputs`` (a directory
    output: each file in it, but Snakemake's own hidden marker)."""
    os.makedirs(DIGEST_DIR, exist_ok=True)
    for output in map(str, outputs):
        paths = (
            [output]
            if not os.path.isdir(output)
            else [os.path.join(output, name) for name in sorted(os.listdir(output)) if not name.startswith(".")]
        )
        for path in paths:
            record = digest_path(path)
            with open(f"{record}.{os.getpid()}.tmp", "w") as fh:
                json.dump({"path": os.path.normpath(path), "size": os.path.getsize(path), "sha256": sha256(path)}, fh)
            os.replace(f"{record}.{os.getpid()}.tmp", record)


def recorded(path: str) -> dict | None:
    """The digest its job recorded for ``path``, or None."""
    try:
        with open(digest_path(path)) as fh:
            digest = json.load(fh)
    except (OSError, ValueError):
        return None
    return digest if digest.get("path") == os.path.normpath(path) else None


def _parquet(path: Path, size: int) -> str | None:
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(path)
    except Exception as exc:  # pyarrow raises several types for a bad footer
        return f"not a complete Parquet file ({_short(exc)})"
    data_end = size - 8 - meta.serialized_size  # footer: metadata, its 4-byte length, 'PAR1'
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            start = min(o for o in (chunk.dictionary_page_offset, chunk.data_page_offset) if o)
            if start + chunk.total_compressed_size > data_end:
                return f"Parquet column chunk {c} of row group {g} runs past the data ({size} bytes)"
    if size <= FULL_READ_BYTES:
        try:
            pq.ParquetFile(path, page_checksum_verification=True).read()
        except Exception as exc:  # a garbled page fails in decompression, decoding or CRC
            return f"Parquet data cannot be read back ({_short(exc)})"
    return None


def _netcdf(path: Path, size: int) -> str | None:
    from . import nc3  # numpy: not for the console logger, which imports this module's caller

    with open(path, "rb") as fh:
        raw = fh.read()
    if raw[:8] == b"\x89HDF\r\n\x1a\n":
        return None  # NetCDF-4 (HDF5) is not written here: left to its reader
    try:
        expected = nc3.file_size(raw, path)
    except (ValueError, KeyError, struct.error) as exc:
        return f"not a NetCDF-3 file ({_short(exc)})"
    if expected != size:
        return f"NetCDF-3 header promises {expected} bytes, the file has {size}"
    return None


def _png(path: Path, size: int) -> str | None:
    raw = path.read_bytes()
    if raw[:8] != _PNG_SIGNATURE:
        return "not a PNG image (signature missing)"
    pos = 8
    while pos + 12 <= len(raw):
        length, kind = struct.unpack(">I4s", raw[pos : pos + 8])
        end = pos + 12 + length
        if end > len(raw):
            break
        if zlib.crc32(raw[pos + 4 : end - 4]) != struct.unpack(">I", raw[end - 4 : end])[0]:
            return f"PNG chunk {kind.decode('latin1')!r} at byte {pos} fails its CRC"
        if kind == b"IEND":
            return None if end == len(raw) else f"{len(raw) - end} bytes after the PNG's end"
        pos = end
    return "PNG image cut short (no IEND chunk)"


def _json(path: Path, size: int) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            json.load(fh)
    except (ValueError, UnicodeDecodeError) as exc:
        return f"not valid JSON ({_short(exc)})"
    return None


def _csv(path: Path, size: int) -> str | None:
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            text = fh.read()
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text ({_short(exc)})"
    if not text.endswith("\n"):
        return "CSV cut short (its last line has no newline)"
    widths = {len(row) for row in csv.reader(text.splitlines())}
    return None if len(widths) == 1 else f"CSV lines have {sorted(widths)} fields"


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 160 else text[:160] + "..."


class Verified:
    """The files that passed :func:`damage`, by (size, mtime_ns): checked again only when changed.

    Kept in one JSON file beside Snakemake's own records; a lost or unreadable record only
    means checking again.
    """

    def __init__(self, record: str):
        self.record = record
        self.seen: dict[str, list[int]] = {}
        with contextlib.suppress(OSError, ValueError), open(record) as fh:
            self.seen = {k: v for k, v in json.load(fh).items() if isinstance(v, list)}
        self.now: dict[str, list[int]] = {}

    def damage(self, path: str) -> str | None:
        try:
            st = os.stat(path)
        except OSError:
            return None  # gone: nothing to remove
        stamp = [st.st_size, st.st_mtime_ns]
        if self.seen.get(path) != stamp:
            why = damage(path, recorded(path))
            if why:
                return why
        self.now[path] = stamp
        return None

    def save(self) -> None:
        with contextlib.suppress(OSError):
            os.makedirs(os.path.dirname(self.record) or ".", exist_ok=True)
            tmp = f"{self.record}.{os.getpid()}.tmp"
            with open(tmp, "w") as fh:
                json.dump(self.now, fh)
            os.replace(tmp, self.record)
