#!/usr/bin/env python3
"""The manifest's trie at a size this machine cannot hold (BENCHMARKS.md, section 11).

UNITS vows of FILES files each get random keys (the SHA-256 of the unit, as the service keys
them); every node over SPLIT files splits, as the publisher splits a leaf; each bin is priced
from sizes measured on a real tree: ENTRY bytes a listed file, CHILD bytes a named child, HEAD
bytes of type, prefix, scope, key id and signature. Prints the trie's shape and the bytes one
report-in re-signs (its leaf, each ancestor, the root), mean and max over the vows.

usage: manifest_model.py UNITS FILES SPLIT ENTRY CHILD HEAD
       manifest_model.py 1000000 16 256 125 125 700
"""
import hashlib, statistics, sys

units, files, split = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
entry, child, head = float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
keys = sorted(hashlib.sha256(f"vow/{i:016x}".encode()).hexdigest() for i in range(units))
leaves, interiors, depths = [], 0, []


def node(ks, depth):
    """This bin's bytes, and what a change of each unit below re-signs from here down."""
    global interiors
    n = len(ks) * files
    if depth > 0 and (n <= split or len(ks) == 1):
        b = head + n * entry
        leaves.append(b)
        depths.append(depth)
        return b, [b] * len(ks)
    groups = {}
    for k in ks:
        groups.setdefault(k[depth], []).append(k)
    b = head + len(groups) * child
    interiors += 1
    return b, [x + b for g in groups.values() for x in node(g, depth + 1)[1]]


_, per_unit = node(keys, 0)
total = sum(leaves) + interiors * (head + 16 * child)
print(f"{units} vows x {files} files, split above {split}: {len(leaves)} leaves "
      f"(mean {statistics.mean(leaves) / 1024:.1f} KiB, max {max(leaves) / 1024:.1f} KiB), "
      f"{interiors} interior bins, depth {min(depths)}-{max(depths)}; one report-in re-signs "
      f"mean {statistics.mean(per_unit) / 1024:.1f} KiB, max {max(per_unit) / 1024:.1f} KiB; "
      f"manifest {total / 1e9:.2f} GB")
