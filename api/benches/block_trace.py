"""Sort the disk read requests of `perf script` output (block:block_rq_issue with call
graphs) by the code path that issued them; used by block_trace.sh.

Usage: block_trace.py PERF_SCRIPT_TXT OK SECS TRACED_SECS
  OK report-ins were answered in SECS seconds, of which TRACED_SECS were traced.
"""
import collections
import re
import sys

# (what it is, a frame the stack must hold, and one more when not empty), first match wins.
PATHS = [
    ("the chain head read (`chain_through_tree`: the file)", "chain_through_tree", "std::fs::read"),
    ("the records after the chain head (the store)", "chain_through_tree", "links_from"),
    ("the chain's records from the store (`links_from`)", "links_from", ""),
    ("`Spares::replace`: the write into the spare", "Spares::replace", "write_"),
    ("`Spares::replace`: the `stat` of the page", "Spares::replace", "symlink_metadata"),
    ("`Spares::replace`: the `open` of the spare", "Spares::replace", "OpenOptions"),
    ("`Spares::replace`: the exchange", "Spares::replace", "renameat2"),
    ("`Spares::replace`: the truncation", "Spares::replace", "set_len"),
    ("manifest bins renamed into place", "write_then_rename", ""),
    ("manifest bins read back (`Trie::read`)", "Trie::read", ""),
    ("the vow's page read back (`vouched`)", "vouched", ""),
]


def stacks(path):
    """Each read request's (thread, frames), leaf first."""
    out, frames, comm = [], None, None
    for line in open(path, errors="replace"):
        if not line.strip():
            if frames is not None:
                out.append((comm, " ".join(frames)))
            frames = None
        elif not line.startswith((" ", "\t")):
            comm = line.split()[0]
            m = re.search(r"block_rq_issue: \S+ (\S+)", line)
            frames = [] if m and m.group(1).startswith("R") else None
        elif frames is not None:
            frames.append(line.strip())
    if frames is not None:
        out.append((comm, " ".join(frames)))
    return out


def main():
    txt, ok, secs, traced = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    reads = stacks(txt)
    counts = collections.Counter()
    for comm, frames in reads:
        for name, a, b in PATHS:
            if a in frames and b in frames:
                counts[name] += 1
                break
        else:
            counts[f"other ({comm})"] += 1
    per = len(reads) / max(ok * traced / secs, 1)
    print(f"{len(reads)} read requests in {traced:.0f} s traced; {ok} report-ins in {secs:.0f} s: "
          f"about {per:.1f} read requests a report-in")
    print("| code path | share of the reads |")
    print("|---|---:|")
    for name, n in counts.most_common():
        print(f"| {name} | {100 * n / max(len(reads), 1):.1f}% |")


if __name__ == "__main__":
    main()
