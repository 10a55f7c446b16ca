"""A small reader for the RON files stormglass writes (experiment.ron, manifest.ron) and reads.

Enough of RON for stormglass's files: structs `(a: 1)` and `Name(a: 1)`, tuples `(1, 2)` and
`Name(1, 2)`, lists, maps, strings, chars, numbers, booleans, `None`/`Some(x)`, unit
variants, `//` and `/* */` comments. Values become Python values:

- `(a: 1)` → `{"a": 1}`; `Name(a: 1)` → `{"a": 1, "_type": "Name"}`
- `(1, 2)` → `[1, 2]`; `Name(1, 2)` → `{"_type": "Name", "_values": [1, 2]}`
- `Some(x)` → `x`; `None` → `None`; `Name` → `"Name"`

`top_level_fields(text)` also returns where each top-level field's value sits in the text,
so a field can be replaced without touching comments or layout (`replace_fields`).
"""
from __future__ import annotations

import re

_NUMBER = re.compile(r"[+-]?(0x[0-9a-fA-F_]+|0b[01_]+|0o[0-7_]+|[0-9][0-9_]*(\.[0-9_]*)?([eE][+-]?[0-9]+)?|\.[0-9]+([eE][+-]?[0-9]+)?|inf|NaN)")
# `r#None` is a raw identifier: an enum variant (or field) named like a keyword.
_IDENT = re.compile(r"(?:r#)?[A-Za-z_][A-Za-z0-9_]*")


class RonError(ValueError):
    pass


class _Parser:
    def __init__(self, text: str, origin: str):
        self.s, self.i, self.origin = text, 0, origin

    def error(self, what: str) -> RonError:
        line = self.s.count("\n", 0, self.i) + 1
        col = self.i - (self.s.rfind("\n", 0, self.i) + 1) + 1
        return RonError(f"{self.origin}:{line}:{col}: {what}")

    def skip(self) -> None:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in " \t\r\n,":
                # Commas are separators; the grammar below never needs to see them.
                self.i += 1
            elif s.startswith("//", self.i):
                j = s.find("\n", self.i)
                self.i = len(s) if j < 0 else j + 1
            elif s.startswith("/*", self.i):
                j = s.find("*/", self.i + 2)
                if j < 0:
                    raise self.error("unterminated /* comment")
                self.i = j + 2
            else:
                return

    def peek(self) -> str:
        self.skip()
        return self.s[self.i] if self.i < len(self.s) else ""

    def expect(self, c: str) -> None:
        if self.peek() != c:
            raise self.error(f"expected `{c}`, found `{self.peek() or 'end of file'}`")
        self.i += 1

    def value(self):
        c = self.peek()
        if c == "":
            raise self.error("expected a value, found the end of the file")
        if c == '"':
            return self.string()
        if c == "'":
            j = self.s.index("'", self.i + 1)
            v = self.s[self.i + 1 : j]
            self.i = j + 1
            return v
        if c == "[":
            self.i += 1
            out = []
            while self.peek() != "]":
                out.append(self.value())
            self.i += 1
            return out
        if c == "{":
            self.i += 1
            out = {}
            while self.peek() != "}":
                k = self.value()
                self.expect(":")
                out[k] = self.value()
            self.i += 1
            return out
        if c == "(":
            return self.parens(None)
        m = _IDENT.match(self.s, self.i)
        if m and m.group() not in ("inf", "NaN"):
            raw = m.group().startswith("r#")
            name = m.group().removeprefix("r#")
            self.i = m.end()
            if not raw and name == "true":
                return True
            if not raw and name == "false":
                return False
            if not raw and name == "None":
                return None
            if self.peek() == "(":
                if not raw and name == "Some":
                    self.i += 1
                    v = self.value()
                    self.expect(")")
                    return v
                return self.parens(name)
            return name
        m = _NUMBER.match(self.s, self.i)
        if m:
            self.i = m.end()
            t = m.group().replace("_", "")
            if t.lstrip("+-") in ("inf", "NaN"):
                return float(t)
            if re.fullmatch(r"[+-]?[0-9]+", t):
                return int(t)
            if t.lstrip("+-").startswith(("0x", "0b", "0o")):
                return int(t, 0)
            return float(t)
        raise self.error(f"unexpected `{c}`")

    def string(self) -> str:
        j = self.i + 1
        out = []
        while True:
            if j >= len(self.s):
                raise self.error("unterminated string")
            ch = self.s[j]
            if ch == "\\":
                nxt = self.s[j + 1]
                out.append({"n": "\n", "t": "\t", "r": "\r", "0": "\0"}.get(nxt, nxt))
                j += 2
            elif ch == '"':
                self.i = j + 1
                return "".join(out)
            else:
                out.append(ch)
                j += 1

    def parens(self, name):
        self.expect("(")
        # A struct if the first item is `ident:`, else a tuple.
        save = self.i
        self.skip()
        m = _IDENT.match(self.s, self.i)
        is_struct = False
        if m:
            k = m.end()
            while k < len(self.s) and self.s[k] in " \t\r\n":
                k += 1
            is_struct = k < len(self.s) and self.s[k] == ":" and not self.s.startswith("::", k)
        self.i = save
        if is_struct:
            out = {}
            while self.peek() != ")":
                m = _IDENT.match(self.s, self.i)
                if not m:
                    raise self.error("expected a field name")
                self.i = m.end()
                self.expect(":")
                out[m.group().removeprefix("r#")] = self.value()
            self.i += 1
            if name is not None:
                out["_type"] = name
            return out
        items = []
        while self.peek() != ")":
            items.append(self.value())
        self.i += 1
        if name is None:
            return items
        return {"_type": name, "_values": items}


def loads(text: str, origin: str = "<ron>"):
    """Parses RON text; errors name origin:line:col."""
    p = _Parser(text, origin)
    v = p.value()
    if p.peek() != "":
        raise p.error("trailing text after the value")
    return v


def load(path) -> object:
    with open(path, encoding="utf-8") as f:
        return loads(f.read(), str(path))


def top_level_fields(text: str, origin: str = "<ron>") -> dict[str, tuple[int, int]]:
    """The top-level struct's fields and the [start, end) of each field's value in `text`."""
    p = _Parser(text, origin)
    p.skip()
    m = _IDENT.match(p.s, p.i)
    if m:
        p.i = m.end()
    p.expect("(")
    spans = {}
    while p.peek() != ")":
        m = _IDENT.match(p.s, p.i)
        if not m:
            raise p.error("expected a field name")
        p.i = m.end()
        p.expect(":")
        p.skip()
        start = p.i
        p.value()
        spans[m.group()] = (start, p.i)
    return spans


def replace_fields(text: str, values: dict[str, str], origin: str = "<ron>") -> str:
    """Sets top-level fields to the given RON text, adding the missing ones before `)`."""
    spans = top_level_fields(text, origin)
    edits = []
    for key, v in values.items():
        if key in spans:
            edits.append((*spans[key], v))
        else:
            # After the last field's value (and its comma, if any), before any comment.
            last = max(e for _, e in spans.values())
            comma = re.match(r"[ \t]*,", text[last:])
            at = last + comma.end() if comma else last
            edits.append((at, at, f"{'' if comma else ','}\n    {key}: {v},"))
    for start, end, v in sorted(edits, reverse=True):
        text = text[:start] + v + text[end:]
    return text


def plain(v):
    """A newtype variant's value (`Float(1.0)` → 1.0), anything else unchanged."""
    if isinstance(v, dict) and set(v) == {"_type", "_values"} and len(v["_values"]) == 1:
        return v["_values"][0]
    return v
