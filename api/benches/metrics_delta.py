#!/usr/bin/env python3
"""What happened between two scrapes of `GET /metrics` (library/METRICS.md), as Tessera reports
a log's write path: writes, time in the sequencer's queue and commit, time to integrate.

usage: metrics_delta.py BEFORE AFTER
prints one line of key=value pairs:
  integrated       report-ins integrated between the scrapes (conduct_integration_duration_seconds)
  integrate_p50/p99/max_le  commit -> the vow's signed snapshot written, seconds (quantiles
                   interpolated inside the histogram's buckets; max_le is the smallest bucket
                   bound above every observation)
  batches, batch_mean, batch_p99   group commits and entries per commit
  commit_p50/p99   one group commit (transaction + the log's files), seconds
  request_p99      POST /vow/report/demo, head read -> answer head, seconds
  tree_puts, puts_per_integrated   files or objects written into the tree
                   (conduct_tree_writes_total, every kind), and per report-in integrated
  vow_puts_per_integrated   of those, the vows' own files (pages, chain heads and pages,
                   feeds, readings) per report-in; puts_by_kind: every kind's count
Standard library only: the text format is parsed here.
"""
import re
import sys

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s+(\S+)')


def parse(path):
    series = {}
    for line in open(path):
        if line.startswith("#"):
            continue
        m = LINE.match(line)
        if not m:
            continue
        labels = tuple(sorted(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or "")))
        series[(m.group(1), labels)] = float(m.group(4))
    return series


def histogram(before, after, name, match=lambda labels: True):
    """(bucket bounds and counts of the delta, sum, count), summed over matching label sets."""
    buckets, total, count = {}, 0.0, 0.0
    for (metric, labels), value in after.items():
        d = dict(labels)
        if not match(d):
            continue
        delta = value - before.get((metric, labels), 0.0)
        if metric == name + "_bucket":
            le = float("inf") if d["le"] == "+Inf" else float(d["le"])
            buckets[le] = buckets.get(le, 0.0) + delta
        elif metric == name + "_sum":
            total += delta
        elif metric == name + "_count":
            count += delta
    return sorted(buckets.items()), total, count


def quantile(buckets, count, q):
    """The q-quantile, linearly interpolated inside its bucket (as Prometheus does)."""
    if count <= 0:
        return float("nan")
    rank, lower, seen = q * count, 0.0, 0.0
    for le, cumulative in buckets:
        if cumulative >= rank:
            if le == float("inf"):
                return lower
            inside = cumulative - seen
            return lower + (le - lower) * ((rank - seen) / inside if inside else 1.0)
        lower, seen = le, cumulative
    return lower


def max_le(buckets, count):
    for le, cumulative in buckets:
        if cumulative >= count:
            return le
    return float("inf")


def main():
    before, after = parse(sys.argv[1]), parse(sys.argv[2])
    out = {}
    b, _, n = histogram(before, after, "conduct_integration_duration_seconds")
    out["integrated"] = int(n)
    out["integrate_p50"] = quantile(b, n, 0.5)
    out["integrate_p99"] = quantile(b, n, 0.99)
    out["integrate_max_le"] = max_le(b, n)
    b, s, n = histogram(before, after, "conduct_sequencer_batch_size")
    out["batches"] = int(n)
    out["batch_mean"] = s / n if n else float("nan")
    out["batch_p99"] = quantile(b, n, 0.99)
    b, _, n = histogram(before, after, "conduct_sequencer_commit_duration_seconds")
    out["commit_p50"] = quantile(b, n, 0.5)
    out["commit_p99"] = quantile(b, n, 0.99)
    b, _, n = histogram(before, after, "conduct_http_request_duration_seconds",
                        lambda d: d.get("route") == "/vow/report/demo" and d.get("method") == "POST")
    out["request_p99"] = quantile(b, n, 0.99)
    puts = {}
    for (metric, labels), value in after.items():
        if metric == "conduct_tree_writes_total":
            kind = dict(labels).get("kind", "?")
            puts[kind] = puts.get(kind, 0.0) + value - before.get((metric, labels), 0.0)
    out["tree_puts"] = int(sum(puts.values()))
    n = out["integrated"]
    out["puts_per_integrated"] = sum(puts.values()) / n if n else float("nan")
    # A report-in's own objects (its vow's files), apart from those a round shares.
    shared = ("checkpoint", "tile", "entry_bundle", "manifest", "vows_index", "other")
    own = sum(v for k, v in puts.items() if k not in shared)
    out["vow_puts_per_integrated"] = own / n if n else float("nan")
    out["puts_by_kind"] = ",".join(f"{k}:{int(v)}" for k, v in sorted(puts.items()) if v)
    print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
