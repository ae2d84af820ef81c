#!/usr/bin/env python3
"""Import circles between the modules of each crate (ARCHITECTURE.md, "Invariants").

A node is a source file (a module); an edge A -> B when A names `crate::<path>`, a
`use crate::{...}` item or a `super::<path>` that resolves to B's module. Test modules are left out. Prints every
strongly connected component of more than one file, then `total circles: N`; exits 1 when N > 0.

    python3 tests/tools/circles.py [ROOT] [CRATE ...]     # default: the repository, every crate
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..")
CRATES = sys.argv[2:] or ["core", "indexer", "renderer", "api", "verify"]
TEST_MODULE = re.compile(r"#\[cfg\((all\()?test[^\]]*\]\s*mod \w+\s*\{")


def module_of(src, path):
    parts = os.path.relpath(path, src)[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def circles(src):
    files = [os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs if f.endswith(".rs")]
    mods = {module_of(src, f): f for f in files}

    def resolve(path):
        path = tuple(path)
        while path:
            if path in mods:
                return path
            path = path[:-1]
        return None

    edges = {m: set() for m in mods}
    for m, f in mods.items():
        with open(f, encoding="utf-8") as fh:
            text = re.sub(r"//[^\n]*", "", fh.read())
        cut = TEST_MODULE.search(text)
        if cut:
            text = text[: cut.start()]
        names = [n.group(1).strip(":").split("::") for n in re.finditer(r"\bcrate((?:::\w+)+)", text)]
        for block in re.finditer(r"use crate::\{([^}]*)\}", text):
            names += [i.strip().split(" as ")[0].split("::") for i in block.group(1).split(",") if i.strip()]
        for s in re.finditer(r"\b((?:super::)+)(\w+(?:::\w+)*)", text):
            up = s.group(1).count("super::")
            if up <= len(m):
                names.append(list(m[: len(m) - up]) + s.group(2).split("::"))
        for n in names:
            t = resolve(n)
            if t is not None and t != m and t != ():
                edges[m].add(t)
    # Tarjan's strongly connected components, iteratively.
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted("/".join(c) for c in comp))
    return out


total = 0
for crate in CRATES:
    for comp in circles(os.path.join(ROOT, crate, "src")):
        total += 1
        print(f"{crate}: circle of {len(comp)} files: {', '.join(comp)}")
print(f"total circles: {total}")
sys.exit(1 if total else 0)
