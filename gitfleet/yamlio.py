"""YAML in and out, fast and safe.

Uses libyaml (the C loader and dumper) where present: the render hot path dumps every distinct
object once, and the pure-Python dumper is several times slower. Loading keeps each document's
start line so errors can name `file:line`, refuses non-UTF-8 bytes, and refuses alias bombs
(documents whose aliases would expand past a node budget).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml

from gitfleet.errors import InputError

_Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)



def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    # Multi-line text (config files in ConfigMaps) reads best as a literal block.
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _str_representer)  # type: ignore[attr-defined]

# An expanded document larger than this many nodes is treated as an alias bomb.
MAX_EXPANDED_NODES = 1_000_000


@dataclass(frozen=True)
class Document:
    """One YAML document of a file: its data and the 1-based line where it starts."""

    data: Any
    line: int
    index: int


def decode(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"not valid UTF-8 (byte {exc.start})", path=path, line=line) from None


def _expanded_size(node: yaml.Node, memo: dict[int, int], limit: int) -> int:
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = 1  # breaks cycles (recursive aliases)
    size = 1
    if isinstance(node, yaml.SequenceNode):
        for child in node.value:
            size += _expanded_size(child, memo, limit)
            if size > limit:
                break
    elif isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            size += _expanded_size(k, memo, limit) + _expanded_size(v, memo, limit)
            if size > limit:
                break
    memo[key] = size
    return size


def load_documents(data: bytes | str, path: str) -> list[Document]:
    """Parse every document of a YAML stream; empty documents are skipped.

    Raises InputError naming the path and line for syntax errors, bad encoding and alias bombs.
    """
    text = decode(data, path) if isinstance(data, bytes) else data
    has_alias = "*" in text
    docs: list[Document] = []
    try:
        loader = _Loader(text)
        try:
            index = 0
            while loader.check_node():
                node = loader.get_node()
                if node is None:
                    continue
                line = node.start_mark.line + 1
                if has_alias and _expanded_size(node, {}, MAX_EXPANDED_NODES) > MAX_EXPANDED_NODES:
                    raise InputError(
                        f"document expands to more than {MAX_EXPANDED_NODES} nodes through "
                        "aliases (an alias bomb?)", path=path, line=line)
                value = loader.construct_document(node)
                if value is not None:
                    docs.append(Document(value, line, index))
                index += 1
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise InputError(f"invalid YAML: {problem}", path=path, line=line) from None
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", path=path) from None
    return docs


def load_one(data: bytes | str, path: str) -> Any:
    """Parse a stream that must hold exactly one document (e.g. `fleet.yaml`)."""
    docs = load_documents(data, path)
    if not docs:
        return None
    if len(docs) > 1:
        raise InputError("expected one YAML document, found several", path=path,
                         line=docs[1].line)
    return docs[0].data


def dump(obj: Any) -> str:
    """Dump one object as block YAML, keys in their given order, deterministic."""
    out: str = yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                         allow_unicode=True, width=1 << 16)
    return out


def dump_all(objs: list[Any]) -> str:
    out: str = yaml.dump_all(objs, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                             allow_unicode=True, width=1 << 16)
    return out


def canonical_json(obj: Any) -> str:
    """A stable text form of `obj` for hashing and equality (sorted keys, no spaces)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
