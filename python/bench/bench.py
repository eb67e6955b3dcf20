"""Times the Python package against the same work in Go (bench/gobench) and
against what a Python user writes without xsect. Run from python/, with the
package installed:

    python bench/bench.py [--reps 7] [--baselines]

It prints the median of --reps runs of each xsect call; --baselines also
times, once each (they are slow), numpy.intersect1d for the count, a
dictionary of postings for all-pairs and a pure-Python Apriori for the
frequent pairs, and checks that they agree with xsect.
"""

import argparse
import itertools
import os
import statistics
import time
from collections import Counter, defaultdict

import numpy as np

import xsect

HERE = os.path.dirname(os.path.abspath(__file__))


def hashed_set(n, k):
    """The n values i*k mod 2^24, sorted: gobench's sets."""
    return np.sort((np.arange(n, dtype=np.uint64) * k % (1 << 24)).astype(np.uint32))


def median_ms(f, reps):
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts), min(ts), max(ts)


def report(name, reps, f):
    med, lo, hi = median_ms(f, reps)
    print(f"{name:52s} median {med:10.2f} ms of {reps} (min {lo:.2f}, max {hi:.2f})", flush=True)
    return med


def once(name, f):
    t = time.perf_counter()
    r = f()
    ms = (time.perf_counter() - t) * 1e3
    print(f"{name:52s} {ms:17.2f} ms (once)", flush=True)
    return ms, r


def postings_allpairs(lists, min_overlap, step=1):
    """All pairs i < j sharing at least min_overlap elements, as a Python
    user writes it: a dictionary of postings, and a Counter per set; only
    for every step-th set i (the rest would take hours on retail)."""
    postings = defaultdict(list)
    for j, t in enumerate(lists):
        for x in t:
            postings[x].append(j)
    out = {}
    for i in range(0, len(lists), step):
        t = lists[i]
        counts = Counter()
        for x in t:
            for j in postings[x]:
                if j > i:
                    counts[j] += 1
        for j, c in counts.items():
            if c >= min_overlap:
                out[i, j] = c
    return out


def apriori_pairs(tx, support):
    """Frequent pairs by Apriori's first two passes, in pure Python."""
    items = Counter(x for t in tx for x in t)
    frequent = {x for x, n in items.items() if n >= support}
    pairs = Counter()
    for t in tx:
        pairs.update(itertools.combinations(sorted(frequent.intersection(t)), 2))
    return {p: n for p, n in pairs.items() if n >= support}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--baselines", action="store_true")
    ap.add_argument("--retail", default=os.path.join(HERE, "..", "..", "data", "retail.dat.gz"))
    ap.add_argument("--min-overlap", type=int, default=10)
    ap.add_argument("--min-support", type=int, default=100)
    ap.add_argument("--step", type=int, default=100,
                    help="the postings baseline runs for every step-th set; its time is multiplied by step")
    args = ap.parse_args()
    print("load", os.getloadavg())

    a, b = hashed_set(1_000_000, 2654435761), hashed_set(1_000_000, 40503)
    report("xsect.count 1M x 1M, assume_sorted=True", args.reps, lambda: xsect.count(a, b, assume_sorted=True))
    report("xsect.count 1M x 1M, assume_sorted=True, 1 thread", args.reps,
           lambda: xsect.count(a, b, assume_sorted=True, threads=1))
    report("xsect.count 1M x 1M (checked)", args.reps, lambda: xsect.count(a, b))
    report("xsect.intersect 1M x 1M", args.reps, lambda: xsect.intersect(a, b))
    c = xsect.load(args.retail)
    report(f"xsect.allpairs retail min_overlap={args.min_overlap}", args.reps,
           lambda: xsect.allpairs(c, min_overlap=args.min_overlap))
    report(f"xsect.frequent_pairs retail min_support={args.min_support}", args.reps,
           lambda: xsect.frequent_pairs(c, min_support=args.min_support))
    if not args.baselines:
        return
    once("numpy.intersect1d 1M x 1M, assume_unique=True", lambda: np.intersect1d(a, b, assume_unique=True).size)
    lists = c.to_lists()
    ms, want = once(f"postings dict allpairs retail, 1/{args.step} of the sets",
                    lambda: postings_allpairs(lists, args.min_overlap, args.step))
    print(f"{'  the whole, estimated (x step)':52s} {ms * args.step:17.2f} ms")
    got = xsect.allpairs(c, min_overlap=args.min_overlap)
    got = {(int(p["i"]), int(p["j"])): int(p["count"]) for p in got if p["i"] % args.step == 0}
    assert got == want
    ms, want = once(f"pure-Python Apriori retail min_support={args.min_support}",
                    lambda: apriori_pairs(lists, args.min_support))
    got = xsect.frequent_pairs(c, min_support=args.min_support)
    assert {(int(p["a"]), int(p["b"])): int(p["support"]) for p in got} == want
    print("load", os.getloadavg())


if __name__ == "__main__":
    main()
