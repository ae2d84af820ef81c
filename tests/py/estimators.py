"""Independent re-implementation of the meter/1 estimators, from the returned tables only.

Reads an attestation (signed or demo) on stdin; recomputes bits, emi, adjusted, ami, direction
and, where p_method is "exact", the exact permutation p as a rational. Python's math module,
not Rust's libm: agreement to 1e-9 is the check. Prints a report; exit 0 when all agree.
"""
import json, math, sys
from fractions import Fraction

TOL = 1e-9


def h(counts, n):
    return -sum(c / n * math.log2(c / n) for c in counts if c)


def mi(table):
    n = sum(map(sum, table))
    rows = [sum(r) for r in table]
    cols = [sum(c) for c in zip(*table)]
    s = 0.0
    for i, r in enumerate(table):
        for j, nij in enumerate(r):
            if nij:
                s += nij / n * math.log2(nij * n / (rows[i] * cols[j]))
    return s


def emi(table):
    n = sum(map(sum, table))
    rows = [sum(r) for r in table]
    cols = [sum(c) for c in zip(*table)]
    lf = lambda k: math.lgamma(k + 1)
    s = 0.0
    for a in rows:
        for b in cols:
            for nij in range(max(1, a + b - n), min(a, b) + 1):
                term = nij / n * math.log2(n * nij / (a * b))
                lp = (lf(a) + lf(b) + lf(n - a) + lf(n - b) - lf(n) - lf(nij)
                      - lf(a - nij) - lf(b - nij) - lf(n - a - b + nij))
                s += term * math.exp(lp)
    return s


def p_exact(table):
    n = sum(map(sum, table))
    a1 = sum(table[1])
    cols = [sum(c) for c in zip(*table)]
    a0 = n - a1
    obs = mi(table)
    thr = obs * (1 - 1e-9) - 1e-15
    total = Fraction(0)
    k = len(cols)

    def rec(j, left, row):
        nonlocal total
        if j == k - 1:
            if left > cols[j]:
                return
            row = row + [left]
            t = [[b - x for b, x in zip(cols, row)], row]
            if mi(t) >= thr:
                w = 1
                for b, x in zip(cols, row):
                    w *= math.comb(b, x)
                total += w
            return
        for x in range(0, min(cols[j], left) + 1):
            rec(j + 1, left - x, row + [x])

    rec(0, a1, [])
    return total / math.comb(n, a1)


def check(name, q, report):
    if q.get("bits") is None:
        report.append(f"{name}: null ({q.get('reason')})")
        return True
    t = q["table"]
    n = sum(map(sum, t))
    ok = True
    want = {"bits": mi(t), "emi": emi(t)}
    want["adjusted"] = want["bits"] - want["emi"]
    hc = h([sum(r) for r in t], n)
    hx = h([sum(c) for c in zip(*t)], n)
    den = (hc + hx) / 2 - want["emi"]
    want["ami"] = 0.0 if abs(den) < 1e-15 else want["adjusted"] / den
    if "direction" in q:
        cols = q["columns"]
        dirty = lambda r: sum(c for s, c in zip(cols, t[r]) if s != "clean") / sum(t[r])
        want["direction"] = dirty(1) - dirty(0)
    if q["p_method"] == "exact":
        want["p"] = float(p_exact(t))
    for k, v in want.items():
        got = q[k]
        if abs(got - v) > TOL:
            ok = False
            report.append(f"{name}.{k}: service {got!r} != independent {v!r}")
    report.append(f"{name}: n={n} K={len(t[0])} p_method={q['p_method']} {'agrees' if ok else 'DIFFERS'}")
    return ok


def main():
    doc = json.load(sys.stdin)
    report, ok = [], True
    for name, q in doc["profile"].items():
        ok &= check(name, q, report)
    print("\n".join(report))
    return 0 if ok else 1


sys.exit(main())
