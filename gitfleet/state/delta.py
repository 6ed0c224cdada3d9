"""Git pack deltas for objects that differ from a like object by one short stretch.

A state of 10,000 clusters holds one Description per cluster and unit that differs from the
same unit's Description of another cluster only by the cluster's name, and folders that differ
only by that Description's id. Stored whole, each is compressed by the hub and inflated again
by `git index-pack`; as a delta against the first of its kind (copy what is common, insert the
few stretches that differ) it is a few dozen bytes that neither side
compresses. Object ids do not change: a delta is only how the pack spells the object.
"""

from __future__ import annotations

import struct

_MAX_COPY = 0xFFFF       # bytes one copy instruction moves (Git reads up to 24 bits; stay low)
_MAX_INSERT = 0x7F       # bytes one insert instruction carries
_COPY = struct.Struct("<BIH")   # a copy instruction: all four offset bytes, both size bytes
_GAP = b"\0" * 8         # equal bytes that end a stretch of differences (fewer: inserted)


def common_prefix(a: bytes, b: bytes) -> int:
    """How many leading bytes `a` and `b` share (binary search over slice compares: a few
    memcmp calls, no Python loop per byte)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while lo < hi:                      # a[:lo] == b[:lo] and a[:hi] != b[:hi]
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def delta(base: bytes, target: bytes, *, most: float = 0.5,
          base_number: int | None = None) -> bytes | None:
    """A Git delta that makes `target` from `base`, or None when what it would insert is
    more than `most` of `target`. `base_number`: `base` as a big-endian integer, when the
    caller keeps it for many targets.

    The common head is copied; what follows is lined up at the end (so one stretch of another
    length, such as a longer cluster name, shifts nothing after it), and the stretches that
    differ there are found at once by XOR of the two as integers: the head, every stretch
    between differences and the tail are copied from `base`, the differences inserted.
    """
    if len(base) == len(target):               # (most: the same text, another name or id)
        head, n, skip, start = 0, len(base), 0, 0
        number = int.from_bytes(base, "big") if base_number is None else base_number
    else:
        head = common_prefix(base, target)
        n = min(len(base), len(target)) - head          # the stretch lined up at the end
        skip, start = len(base) - n, len(target) - n    # where it begins in base and target
        number = int.from_bytes(base[skip:], "big")
    inserted = start - head
    runs: list[tuple[int, int]] = []
    if n:
        xor = (number ^ int.from_bytes(target[start:], "big")).to_bytes(n, "big")
        runs = _nonzero(xor)
        inserted += sum(end - begin for begin, end in runs)
    if inserted + 16 > most * len(target):
        return None
    out = bytearray(_size(len(base)) + _size(len(target)))
    _copy(out, 0, head)
    _insert(out, target[head:start])
    at = 0
    for begin, end in runs:
        _copy(out, skip + at, begin - at)
        _insert(out, target[start + begin:start + end])
        at = end
    _copy(out, skip + at, n - at)
    return bytes(out)


def _nonzero(xor: bytes) -> list[tuple[int, int]]:
    """The stretches [begin, end) of `xor` holding non-zero bytes, less than 8 zero bytes
    apart taken as one (found by C-speed find and strip, not a loop over bytes)."""
    last = len(xor.rstrip(b"\0"))
    at = len(xor) - len(xor.lstrip(b"\0"))
    runs = []
    while at < last:
        gap = xor.find(_GAP, at, last)
        if gap < 0:
            runs.append((at, last))
            break
        runs.append((at, gap))
        rest = xor[gap:last]
        at = gap + len(rest) - len(rest.lstrip(b"\0"))
    return runs


def entry_header(kind: int, size: int) -> bytes:
    """The header of a pack entry: its type and (inflated) size, 4 then 7 bits a byte."""
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    header = bytearray()
    while size:
        header.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    header.append(byte)
    return bytes(header)


def ofs_header(size: int, distance: int) -> bytes:
    """The header of an OFS_DELTA pack entry: type 6, the delta's size, then how far back in
    the pack its base starts (Git's offset encoding, big-endian with a bias per byte)."""
    header = entry_header(6, size)
    tail = [distance & 0x7F]
    distance >>= 7
    while distance:
        distance -= 1
        tail.append(0x80 | (distance & 0x7F))
        distance >>= 7
    return header + bytes(reversed(tail))


def _size(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _insert(out: bytearray, data: bytes) -> None:
    for start in range(0, len(data), _MAX_INSERT):
        piece = data[start:start + _MAX_INSERT]
        out.append(len(piece))
        out += piece


def _copy(out: bytearray, offset: int, size: int) -> None:
    """Copy instructions with every offset and size byte present (Git reads a zero byte as
    well as an absent one; a size is never 0 here, which would mean 64 KiB)."""
    while size > 0:
        n = min(size, _MAX_COPY)
        out += _COPY.pack(0xBF, offset, n)
        offset += n
        size -= n
