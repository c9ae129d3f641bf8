#!/usr/bin/env python3
"""No import circle inside any crate: for every crate of the workspace, the graph of its
top-level modules (an edge where a module's code, outside comments and tests, names
`crate::other`) has no cycle. Exits 1 naming the circles it finds."""
import glob
import os
import re
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def top_module(src, path):
    parts = os.path.relpath(path, src)[:-3].split("/")
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return parts[0] if parts else ""


def edges_of(src):
    edges = {}
    for path in glob.glob(os.path.join(src, "**", "*.rs"), recursive=True):
        module = top_module(src, path)
        if not module or path.endswith("tests.rs"):
            continue
        code = "\n".join(l for l in open(path).read().split("\n") if not l.strip().startswith("//"))
        cut = code.find("#[cfg(test)]")
        if cut >= 0:
            code = code[:cut]
        named = set(re.findall(r"crate::([a-z_0-9]+)", code))
        for group in re.findall(r"use crate::\{([^}]*)\}", code):
            named |= set(re.findall(r"\b([a-z_0-9]+)::", group))
        edges.setdefault(module, set()).update(named - {module})
    return edges


def circles(edges):
    found, state, stack = [], {}, []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(edges.get(u, ())):
            if state.get(v) == 1:
                found.append(stack[stack.index(v):] + [v])
            elif not state.get(v):
                visit(v)
        stack.pop()
        state[u] = 2

    for u in sorted(edges):
        if not state.get(u):
            visit(u)
    return found


bad = False
for manifest in sorted(glob.glob(os.path.join(root, "*", "Cargo.toml"))):
    src = os.path.join(os.path.dirname(manifest), "src")
    if not os.path.isdir(src):
        continue
    for circle in circles(edges_of(src)):
        bad = True
        print(f"{os.path.basename(os.path.dirname(manifest))}: {' -> '.join(circle)}")
sys.exit(1 if bad else 0)
