"""YAML in and out, fast and safe.

Uses libyaml (the C loader and dumper) where present: the render hot path dumps every distinct
object once, and the pure-Python dumper is several times slower. Loading keeps each document's
start line so errors can name `file:line`, refuses non-UTF-8 bytes, and refuses alias bombs
(documents whose aliases would expand past a node budget).

What loads is JSON-shaped data only, because everything downstream (schemas, hashing, the
Kubernetes API) is JSON: a value YAML can express but JSON cannot hold (a date, bytes, a set, a
non-string key, a 70-bit integer, NaN, nesting without end) is an InputError at its line that
says what to write instead, never a Python object that makes a later step crash.
"""

from __future__ import annotations

import functools
import json
import math
import re
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
# Collections nested deeper than this are refused: nothing Kubernetes holds is that deep, and
# every later step (schema checks, JSON, dumping) walks the data recursively.
MAX_DEPTH = 100
# libyaml composes recursively in C and overflows the C stack (a crash no `except` can catch)
# on a few ten thousand nested collections. A file whose cheap upper bound of nesting reaches
# this has its real nesting measured from the parser's events first.
_C_SAFE_NESTING = 2_000
_LEAD = re.compile(r"^[ \t?:-]*", re.MULTILINE)
INT64 = (-(1 << 63), (1 << 63) - 1)

_TAG = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (_TAG + t for t in ("str", "int", "float", "bool", "null"))
_MAP, _SEQ, _MERGE, _VALUE = (_TAG + t for t in ("map", "seq", "merge", "value"))
_TYPE_NAMES = {_INT: "an integer", _FLOAT: "a number", _BOOL: "a boolean", _NULL: "null"}
# Tags YAML knows but JSON (and so Kubernetes) cannot hold: what they are, what to write instead.
_REFUSED = {
    _TAG + "timestamp": ("a YAML date/time", ""),
    _TAG + "binary": ("!!binary data", "put the base64 text in a plain string (a Secret's "
                      "`data` takes it as is)"),
    _TAG + "set": ("a !!set", "write a list"),
    _TAG + "omap": ("an !!omap", "write a mapping or a list of mappings"),
    _TAG + "pairs": ("!!pairs", "write a mapping or a list of mappings"),
}
_SCALAR = yaml.constructor.SafeConstructor()


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


def _nesting_bound(text: str) -> int:
    """An upper bound of how deep collections nest in `text`, at C speed.

    A block collection one level deeper needs one more column of indentation or one more
    indicator (`- `, `? `) at the start of its line: block depth is at most twice the longest
    run of spaces and indicators that starts a line, plus one. Flow depth is at most the number
    of `[` and `{` in the text.
    """
    lead = max(map(len, _LEAD.findall(text)), default=0)
    return 2 * lead + 2 + text.count("[") + text.count("{")


def _quote_hint(node: yaml.ScalarNode) -> str:
    text = node.value.replace("'", "''")
    return f"quote it: '{text}'"


def _where(path: str, node: yaml.Node) -> dict[str, Any]:
    return {"path": path, "line": node.start_mark.line + 1}


class _Builder:
    """Turns one composed YAML document into JSON-shaped data (dict, list, str, int, float,
    bool, None), or raises InputError at the first node that is not: PyYAML's own constructor
    would build dates, bytes and sets, accept null and integer keys, and recurse without limit.
    """

    def __init__(self, path: str, *, aliases: bool) -> None:
        self.path = path
        self.aliases = aliases
        self.memo: dict[int, Any] = {}
        self.open: set[int] = set()

    def fail(self, node: yaml.Node, message: str) -> InputError:
        return InputError(message, **_where(self.path, node))

    def build(self, node: yaml.Node, depth: int) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node)
        if depth > MAX_DEPTH:
            raise self.fail(node, f"collections nest deeper than {MAX_DEPTH} levels")
        if not self.aliases:
            return self.collection(node, depth)
        key = id(node)
        if key in self.memo:
            return self.memo[key]
        if key in self.open:
            raise self.fail(node, "an alias refers to a collection that contains it (a "
                            "recursive alias): write the data out instead")
        self.open.add(key)
        value = self.collection(node, depth)
        self.open.discard(key)
        self.memo[key] = value
        return value

    def collection(self, node: yaml.Node, depth: int) -> Any:
        if isinstance(node, yaml.SequenceNode):
            if node.tag != _SEQ:
                raise self.tag_error(node)
            return [self.build(child, depth + 1) for child in node.value]
        if node.tag != _MAP:
            raise self.tag_error(node)
        out: dict[str, Any] = {}
        merged: list[dict[str, Any]] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                merged.append(self.merge_source(value_node, depth))
                continue
            key = self.key(key_node)
            if key in out:
                raise self.fail(key_node, f"key {key!r} appears twice in this mapping (YAML "
                                "would silently keep the last one)")
            out[key] = self.build(value_node, depth + 1)
        if merged:
            base: dict[str, Any] = {}
            for source in reversed(merged):  # the first merged mapping wins, as in YAML
                base.update(source)
            base.update(out)
            out = base
        return out

    def merge_source(self, node: yaml.Node, depth: int) -> dict[str, Any]:
        sources = node.value if isinstance(node, yaml.SequenceNode) else [node]
        out: dict[str, Any] = {}
        for source in reversed(sources):
            value = self.build(source, depth + 1)
            if not isinstance(value, dict):
                raise self.fail(source, "a merge key (<<) takes a mapping or a list of mappings")
            out.update(value)
        return out

    def key(self, node: yaml.Node) -> str:
        if isinstance(node, yaml.ScalarNode):
            if node.tag in (_STR, _VALUE):
                value: str = node.value
                return value
            if node.tag == _NULL:
                raise self.fail(node, "a mapping key is null (empty or `~`): Kubernetes "
                                "objects need string keys")
            what = _TYPE_NAMES.get(node.tag)
            if what is not None:
                raise self.fail(node, f"mapping key {node.value!r} reads as {what}, and "
                                f"Kubernetes objects need string keys: {_quote_hint(node)}")
            raise self.tag_error(node)
        kind = "list" if isinstance(node, yaml.SequenceNode) else "mapping"
        raise self.fail(node, f"a mapping key is a {kind}: Kubernetes objects need string keys")

    def scalar(self, node: yaml.ScalarNode) -> Any:
        tag = node.tag
        if tag == _STR:
            return node.value
        if tag == _NULL:
            return None
        try:
            if tag == _INT:
                number = _SCALAR.construct_yaml_int(node)
                if not INT64[0] <= number <= INT64[1]:
                    raise self.fail(node, f"integer {node.value} does not fit in 64 bits; "
                                    f"if it is text, {_quote_hint(node)}")
                return number
            if tag == _BOOL:
                return _SCALAR.construct_yaml_bool(node)
            if tag == _FLOAT:
                real = _SCALAR.construct_yaml_float(node)
                if not math.isfinite(real):
                    raise self.fail(node, f"{node.value} is not a finite number, which JSON "
                                    f"cannot hold; if it is text, {_quote_hint(node)}")
                return real
        except (ValueError, KeyError):  # an explicit !!int, !!float or !!bool on other text
            name = tag[len(_TAG):]
            raise self.fail(node, f"{node.value!r} is not a valid {name}: remove the !!{name} "
                            "tag, or write a value of that type") from None
        raise self.tag_error(node)

    def tag_error(self, node: yaml.Node) -> InputError:
        tag = node.tag
        refused = _REFUSED.get(tag)
        if refused is not None:
            what, instead = refused
            if not instead:  # a date: the text was meant as a string
                instead = _quote_hint(node) if isinstance(node, yaml.ScalarNode) else \
                    "write it as a quoted string"
                what = f"{node.value!r} reads as {what}" if isinstance(node, yaml.ScalarNode) \
                    else f"this value is {what}"
            return self.fail(node, f"{what}, which JSON and so a Kubernetes object cannot "
                             f"hold: {instead}")
        shown = "!!" + tag[len(_TAG):] if tag.startswith(_TAG) else tag
        return self.fail(node, f"YAML tag {shown!r} is not allowed: gitfleet reads plain "
                         "YAML (strings, numbers, booleans, null, lists, mappings); remove the "
                         "tag, or quote the value if the tag is meant as text")


def _check_nesting(text: str, path: str) -> None:
    """Refuse nesting beyond MAX_DEPTH from the parser's events, without composing: libyaml's
    parser keeps its state on the heap, its composer on the C stack."""
    loader = _Loader(text)
    depth = 0
    try:
        while (event := loader.get_event()) is not None:
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    mark = event.start_mark
                    raise InputError(f"collections nest deeper than {MAX_DEPTH} levels",
                                     path=path, line=mark.line + 1 if mark else None)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.MarkedYAMLError as err:
        # libyaml from 0.2.6 (PyYAML 6.0.4 wheels) stops at its own nesting limit while its
        # scanner looks ahead, before the events reach the count above: the same fault, said
        # the same way whichever libyaml the install brought
        if "nesting depth" not in str(err.problem):
            raise
        mark = err.context_mark or err.problem_mark
        raise InputError(f"collections nest deeper than {MAX_DEPTH} levels",
                         path=path, line=mark.line + 1 if mark else None) from None
    finally:
        loader.dispose()


def _compose(text: str, path: str) -> list[yaml.Node]:
    """Every document node of the stream; a syntax error anywhere is reported before any
    problem of the content."""
    if _nesting_bound(text) >= _C_SAFE_NESTING:
        _check_nesting(text, path)
    loader = _Loader(text)
    nodes: list[yaml.Node] = []
    try:
        while loader.check_node():
            nodes.append(loader.get_node())
    except RecursionError:  # the pure-Python composer, when libyaml is missing
        raise InputError(f"collections nest far deeper than {MAX_DEPTH} levels",
                         path=path) from None
    finally:
        loader.dispose()
    return nodes


def _expanded_size(node: yaml.Node, memo: dict[int, int], limit: int) -> int:
    key = id(node)
    if key in memo:
        return memo[key]
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
    """Parse every document of a YAML stream into JSON-shaped data; empty documents are skipped.

    Raises InputError naming the path and line for syntax errors, bad encoding, alias bombs and
    recursive aliases, nesting beyond MAX_DEPTH, and values JSON cannot hold (dates, bytes,
    sets, unknown tags, non-string keys, integers beyond 64 bits, NaN and infinities).
    """
    text = decode(data, path) if isinstance(data, bytes) else data
    aliases = "*" in text
    docs: list[Document] = []
    try:
        nodes = _compose(text, path)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise InputError(f"invalid YAML: {problem}", path=path, line=line) from None
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", path=path) from None
    for index, node in enumerate(nodes):
        value = _Builder(path, aliases=aliases).build(node, 1)
        line = node.start_mark.line + 1
        if aliases and _expanded_size(node, {}, MAX_EXPANDED_NODES) > MAX_EXPANDED_NODES:
            raise InputError(f"document expands to more than {MAX_EXPANDED_NODES} nodes "
                             "through aliases (an alias bomb?)", path=path, line=line)
        if value is not None:
            docs.append(Document(value, line, index))
    return docs


@functools.lru_cache(maxsize=4)
def _recomposed(data: bytes | str) -> tuple[yaml.Node, ...] | None:
    # Kept for the next few lookups: a file with many problems is composed again once.
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    try:
        return tuple(_compose(text, ""))
    except (yaml.YAMLError, InputError):
        return None


def line_of(data: bytes | str, index: int, where: tuple[str | int, ...]) -> int | None:
    """The 1-based line of the node at JSON path `where` in document `index` of a stream that
    loaded before (so composing it again cannot fail); the line of the deepest part of the path
    that exists, so a problem of a missing field points at its parent.

    Loading keeps no node marks (they cost time and memory on every file): this composes the
    document again, which only happens for documents that have a problem.
    """
    nodes = _recomposed(data)
    if nodes is None or index >= len(nodes):
        return None
    node: yaml.Node = nodes[index]
    mark = node.start_mark
    for part in where:
        found: yaml.Node | None = None
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.value == part:
                    found, mark = value_node, key_node.start_mark  # the field's own line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and \
                0 <= part < len(node.value):
            found = node.value[part]
            mark = found.start_mark
        if found is None:
            break
        node = found
    return int(mark.line) + 1


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
