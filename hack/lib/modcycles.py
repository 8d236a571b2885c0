#!/usr/bin/env python3
"""Fails when the modules of a crate import each other in a cycle.

Usage: modcycles.py CRATE_SRC_DIR...

A module is one source file (`a.rs` and `a/b.rs` are `a` and `a::b`). An
edge A -> B is any path in A that names an item of B (`crate::b::x`,
`super::x`, `self::b::x`, `b::x` after `use crate::b`). `mod b;` declarations
are not edges. Unit-test modules (`#[cfg(test)] mod tests;` files named
tests.rs) are left out: tests may reach anywhere. A strongly connected set
of more than one module is a cycle and is printed with the lines that make it.
"""

import os
import re
import sys


def modules(src):
    out = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src)[:-3].split(os.sep)
            if rel[-1] == "mod":
                rel = rel[:-1]
            if rel in (["lib"], ["main"]):
                rel = []
            if rel and rel[-1] == "tests":
                continue
            if rel and rel[0] == "bin":
                continue
            out[tuple(rel)] = path
    return out


PATH = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+|(?:crate|super|self)::\{[^}]*\})")


def strip_tests(text):
    """Drops inline `#[cfg(test)] mod tests { ... }` blocks."""
    m = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)
    if not m:
        return text
    depth, i = 0, m.end() - 1
    while i < len(text):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[: m.start()] + strip_tests(text[i + 1 :])
        i += 1
    return text[: m.start()]


def expand(path):
    """`crate::{a::x, b}` -> ["crate::a::x", "crate::b"] (one level)."""
    m = re.match(r"^(crate|super|self)::\{(.*)\}$", path, re.S)
    if not m:
        return [path]
    return [f"{m.group(1)}::{p.strip()}" for p in m.group(2).split(",") if p.strip()]


def target(mods, here, path):
    parts = path.split("::")
    if parts[0] == "crate":
        base, rest = [], parts[1:]
    elif parts[0] == "super":
        base, rest = list(here[:-1]), parts[1:]
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
    else:  # self
        base, rest = list(here), parts[1:]
    best = tuple(base) if tuple(base) in mods else None
    cur = list(base)
    for p in rest:
        cur.append(p)
        if tuple(cur) in mods:
            best = tuple(cur)
        else:
            break
    return best


def check(src):
    mods = modules(src)
    edges = {m: {} for m in mods}
    for m, path in mods.items():
        text = strip_tests(open(path, encoding="utf-8").read())
        for lineno, line in enumerate(text.splitlines(), 1):
            code = line.split("//", 1)[0]
            for raw in PATH.findall(code):
                for p in expand(raw):
                    t = target(mods, m, p)
                    if t is not None and t != m:
                        edges[m].setdefault(t, f"{os.path.relpath(path)}:{lineno}: {line.strip()}")
    # Tarjan's strongly connected components.
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    sys.setrecursionlimit(10000)
    for v in mods:
        if v not in index:
            visit(v)
    name = lambda m: "::".join(m) or "crate"
    for comp in out:
        print(f"modcycles: {src}: modules import each other: {', '.join(sorted(name(c) for c in comp))}")
        for a in comp:
            for b, why in edges[a].items():
                if b in comp:
                    print(f"  {name(a)} -> {name(b)}  ({why})")
    return not out


ok = all([check(d) for d in sys.argv[1:]])
sys.exit(0 if ok else 1)
