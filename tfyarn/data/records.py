"""TFRecord framing read from a byte stream in large reads, without TensorFlow.

A TFRecord file is a sequence of ``length (uint64 LE) | crc of length (uint32) | data |
crc of data (uint32)``. Reading it one record at a time through a network client is about
25x slower than reading megabytes at once and cutting the records out of the buffer, which
is what this does. The CRCs are not checked (HDFS checksums every block it serves).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import BinaryIO

READ_BYTES = 8 * 2**20  # one read from the stream
BATCH_RECORDS = 1024  # records handed on at once by record_batches
_HEADER = struct.Struct("<QI")  # length, masked crc32c of the length
_FOOTER = 4  # masked crc32c of the data
# A length beyond this is no record: the file is compressed, or no TFRecord file at all.
MAX_RECORD = 2**31


class RecordError(ValueError):
    """The stream is not an uncompressed TFRecord file, or it ends inside a record."""


def record_spans(stream: BinaryIO, name: str,
                 read_bytes: int = READ_BYTES) -> Iterator[tuple[bytes, list[int], list[int]]]:
    """(buffer, starts, lengths): the records whole in each buffer, in file order, found
    without copying them out (TensorFlow cuts them out of the buffer in one op)."""
    buffer = b""
    ended = False
    while not ended:
        chunk = stream.read(read_bytes)
        ended = not chunk
        buffer += chunk or b""
        start, starts, lengths = 0, [], []
        while len(buffer) - start >= _HEADER.size:
            length, _ = _HEADER.unpack_from(buffer, start)
            if length > MAX_RECORD:
                raise RecordError(f"{name}: a record of {length} bytes at a record boundary: "
                                  "not an uncompressed TFRecord file (compression=\"GZIP\" "
                                  "reads a gzipped one)")
            end = start + _HEADER.size + length + _FOOTER
            if end > len(buffer):
                break
            starts.append(start + _HEADER.size)
            lengths.append(length)
            start = end
        if starts:
            yield buffer, starts, lengths  # the tail is the next buffer's head
        buffer = buffer[start:]
    if buffer:
        raise RecordError(f"{name}: ends inside a record ({len(buffer)} bytes left): the file "
                          "is truncated, or still being written")


def record_batches(stream: BinaryIO, name: str, read_bytes: int = READ_BYTES,
                   batch_records: int = BATCH_RECORDS) -> Iterator[list[bytes]]:
    """Lists of up to ``batch_records`` records, in file order (for use without TensorFlow)."""
    batch: list[bytes] = []
    for buffer, starts, lengths in record_spans(stream, name, read_bytes):
        for start, length in zip(starts, lengths, strict=True):
            batch.append(buffer[start:start + length])
            if len(batch) >= batch_records:
                yield batch
                batch = []
    if batch:
        yield batch
