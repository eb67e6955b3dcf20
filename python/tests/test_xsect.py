"""Tests of the Python package xsect against pure-Python references: sets,
dictionaries of postings, and fractions.Fraction for thresholds."""

import _thread
import gzip
import itertools
import math
import os
import random
import threading
import time
from collections import Counter, defaultdict
from fractions import Fraction

import numpy as np
import pytest

import xsect

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.environ.get("XSECT_DATA") or os.path.join(ROOT, "..", "shared", "data")


def shared(*parts):
    """The path of a shared data set, or a skip saying it is absent."""
    p = os.path.join(DATA, *parts)
    if not os.path.exists(p):
        pytest.skip(f"{p} is absent: the shared data sets are not beside the repository (set XSECT_DATA)")
    return p


def random_lists(rng, k, universe, max_size):
    return [rng.sample(range(universe), rng.randint(0, min(max_size, universe))) for _ in range(k)]


def ref_overlaps(r, s=None):
    """{(i, j): |r[i] ∩ s[j]|} for every pair sharing an element (i < j in
    a self-join), through a dictionary of postings."""
    postings = defaultdict(list)
    for j, t in enumerate(r if s is None else s):
        for x in set(t):
            postings[x].append(j)
    out = Counter()
    for i, t in enumerate(r):
        for x in set(t):
            for j in postings[x]:
                if s is not None or i < j:
                    out[i, j] += 1
    return out


def as_dict(pairs, field="count"):
    return {(int(p["i"]), int(p["j"])): int(p[field]) for p in pairs}


def test_collection_from_lists_and_csr():
    c = xsect.Collection.from_lists([[9, 1, 5, 5], [], [5, 9], {3}])
    assert len(c) == 4
    assert c.to_lists() == [[1, 5, 9], [], [5, 9], [3]]
    assert c[-1].tolist() == [3]
    assert c.offsets.dtype == np.uint64 and c.elements.dtype == np.uint32
    d = xsect.Collection.from_csr(c.offsets, c.elements)
    assert d.elements is c.elements  # in place, no copy
    assert d.to_lists() == c.to_lists()
    with pytest.raises(IndexError):
        c[4]
    assert len(xsect.Collection.from_lists([])) == 0


@pytest.mark.parametrize("offsets,elements,message", [
    ([0, 2], [5, 3], "increasing"),
    ([0, 3], [1, 2], ""),
    ([1, 2], [1, 2], ""),
    ([0, 2], [-1, 2], "not in"),
    ([0, 1], [2**32], "not in"),
    ([0, 1], [1.5], "integers"),
])
def test_from_csr_rejects(offsets, elements, message):
    with pytest.raises(xsect.Error, match=message):
        xsect.Collection.from_csr(offsets, elements)


def test_count_and_intersect_random():
    rng = np.random.default_rng(1)
    for n, m, u in [(0, 10, 100), (1000, 1000, 3000), (50, 100000, 10**6), (100000, 100000, 2**32 - 1)]:
        a = rng.integers(0, u, n, dtype=np.uint64)
        b = rng.integers(0, u, m, dtype=np.uint64)
        want = sorted(set(a.tolist()) & set(b.tolist()))
        # Unsorted, with duplicates: sorted into copies.
        assert xsect.count(a, b) == len(want)
        assert xsect.intersect(a, b).tolist() == want
        sa, sb = np.unique(a).astype(np.uint32), np.unique(b).astype(np.uint32)
        assert xsect.count(sa, sb, device="cpu") == len(want)
        got = xsect.intersect(sa, sb, threads=1)
        assert got.dtype == np.uint32 and got.tolist() == want
    # The inputs are not changed.
    a = np.array([5, 1, 3], np.uint32)
    xsect.count(a, [3])
    assert a.tolist() == [5, 1, 3]


def test_count_methods_and_explain():
    a, b = np.arange(0, 3000, 2, dtype=np.uint32), np.arange(0, 3000, 3, dtype=np.uint32)
    n, text = xsect.count(a, b, explain=True)
    assert n == 500 and "pairwise" in text
    assert xsect.count(a, b, technique="merge", device="cpu") == 500
    with pytest.raises(xsect.Error, match="method"):
        xsect.count(a, b, technique="nosuch", device="cpu")
    with pytest.raises(xsect.Error, match="device"):
        xsect.count(a, b, device="tpu")
    with pytest.raises(xsect.Error, match="1-d"):
        xsect.count(np.zeros((2, 2), np.uint32), b)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_allpairs_random(seed):
    rng = random.Random(seed)
    r = random_lists(rng, 150, 60, 20)
    s = random_lists(rng, 90, 60, 20)
    ref = ref_overlaps(r)
    for m in [1, 3, 6]:
        got = xsect.allpairs(xsect.Collection.from_lists(r), min_overlap=m)
        assert got.dtype == xsect.PAIR
        assert as_dict(got) == {k: v for k, v in ref.items() if v >= m}
        assert np.all(np.diff(got["i"].astype(np.int64) * 1000 + got["j"]) > 0)  # sorted
        assert xsect.allpairs(r, min_overlap=m, count_only=True) == len(got)
    ref = ref_overlaps(r, s)
    for technique in ["auto", "merge", "scancount", "bitmap"]:
        got = xsect.allpairs(r, s, min_overlap=2, technique=technique, device="cpu", threads=1)
        assert as_dict(got) == {k: v for k, v in ref.items() if v >= 2}
    # min_overlap=0: every pair, disjoint ones included.
    assert xsect.allpairs(r, min_overlap=0, count_only=True) == 150 * 149 // 2


def test_allpairs_explain():
    res, text = xsect.allpairs([[1, 2], [2, 3]], explain=True)
    assert as_dict(res) == {(0, 1): 1}
    assert "choice" in text and "ran" in text


def ref_containment(r, s, degree):
    self_join = s is None
    out = {}
    for (i, j), c in ref_overlaps(r, s).items():
        a, b = len(set(r[i])), len(set((r if self_join else s)[j]))
        if a and b and Fraction(c, min(a, b)) >= degree:
            out[i, j] = c
    return out


def test_containment_random_and_at_threshold():
    rng = random.Random(5)
    r = random_lists(rng, 200, 30, 8)
    s = random_lists(rng, 100, 30, 8)
    for d in ["1", "0.8", "2/3", Fraction(1, 2), 0.75]:
        want = Fraction(d) if not isinstance(d, float) else Fraction(repr(d))
        assert as_dict(xsect.containment(r, min_degree=d)) == ref_containment(r, None, want)
        assert as_dict(xsect.containment(r, s, min_degree=d)) == ref_containment(r, s, want)
    # Exactly at the threshold: 4 of 5 is 0.8.
    c = [[1, 2, 3, 4, 5], [1, 2, 3, 4, 9, 10]]
    assert as_dict(xsect.containment(c, min_degree=0.8)) == {(0, 1): 4}
    assert as_dict(xsect.containment(c, min_degree="0.8000001")) == {}


def ref_similar(measure, c, a, b, t):
    if measure == "jaccard":
        return Fraction(c, a + b - c) >= t
    if measure == "dice":
        return Fraction(2 * c, a + b) >= t
    if measure == "cosine":
        return Fraction(c * c, a * b) >= t * t
    return c >= t


def ref_simjoin(r, s, measure, t):
    other = r if s is None else s
    out = {}
    for (i, j), c in ref_overlaps(r, s).items():
        a, b = len(set(r[i])), len(set(other[j]))
        if ref_similar(measure, c, a, b, t):
            out[i, j] = c
    return out


@pytest.mark.parametrize("measure,threshold", [
    ("jaccard", "0.5"), ("jaccard", "0.7"), ("cosine", "0.6"), ("dice", "2/3"), ("overlap", "3"),
    ("jaccard", Fraction(3, 5)), ("cosine", 0.75),
])
def test_simjoin_random(measure, threshold):
    rng = random.Random(7)
    r = random_lists(rng, 200, 25, 10)
    s = random_lists(rng, 80, 25, 10)
    t = Fraction(repr(threshold)) if isinstance(threshold, float) else Fraction(threshold)
    for other in [None, s]:
        got = xsect.simjoin(r, other, measure=measure, threshold=threshold)
        assert got.dtype == xsect.SIMILAR_PAIR
        want = ref_simjoin(r, other, measure, t)
        assert as_dict(got, "overlap") == want
        for p in got:
            a, b = len(set(r[p["i"]])), len(set((r if other is None else other)[p["j"]]))
            c = int(p["overlap"])
            exact = {"jaccard": c / (a + b - c), "dice": 2 * c / (a + b), "cosine": c / math.sqrt(a * b),
                     "overlap": c}[measure]
            assert p["similarity"] == pytest.approx(exact, rel=1e-12)


def test_simjoin_exactly_at_threshold():
    # Two 19-element sets sharing 18: Jaccard 18/20 = 0.9 exactly.
    a = list(range(19))
    b = list(range(18)) + [100]
    for t in ["0.9", 0.9, Fraction(9, 10)]:
        got = xsect.simjoin([a, b], threshold=t)
        assert as_dict(got, "overlap") == {(0, 1): 18}
    assert len(xsect.simjoin([a, b], threshold="0.90001")) == 0
    # distinct: equal sets count once, as their smallest id.
    c = [a, a, b]
    assert xsect.simjoin(c, threshold="0.9", count_only=True) == 3
    assert as_dict(xsect.simjoin(c, threshold="0.9", distinct=True), "overlap") == {(0, 2): 18}


def ref_frequent_pairs(tx, support):
    items = Counter(x for t in tx for x in set(t))
    keep = {x for x, n in items.items() if n >= support}
    pairs = Counter()
    for t in tx:
        for p in itertools.combinations(sorted(set(t) & keep), 2):
            pairs[p] += 1
    return {p: n for p, n in pairs.items() if n >= support}


def test_frequent_pairs_random():
    rng = random.Random(11)
    tx = random_lists(rng, 500, 40, 15)
    for support in [1, 20, 60, 0.1, "5%"]:
        abs_support = support if isinstance(support, int) else math.ceil(
            Fraction(support[:-1]) / 100 * 500 if isinstance(support, str) else Fraction(repr(support)) * 500)
        want = ref_frequent_pairs(tx, abs_support)
        got = xsect.frequent_pairs(tx, min_support=support)
        assert got.dtype == xsect.FREQUENT_PAIR
        assert {(int(p["a"]), int(p["b"])): int(p["support"]) for p in got} == want
        assert xsect.frequent_pairs(tx, min_support=support, count_only=True) == len(want)
    for technique in ["apriori", "eclat", "fpgrowth", "bitmap", "batmap"]:
        got = xsect.frequent_pairs(tx, min_support=30, technique=technique, device="cpu")
        assert {(int(p["a"]), int(p["b"])): int(p["support"]) for p in got} == ref_frequent_pairs(tx, 30)


def test_index_build_save_open_query(tmp_path):
    rng = random.Random(13)
    docs = random_lists(rng, 300, 50, 12)
    queries = random_lists(rng, 100, 55, 3) + [[], [1000]]
    want = [sorted(i for i, d in enumerate(docs) if set(q) <= set(d)) if q else [] for q in queries]
    idx = xsect.Index.build(docs)
    assert idx.docs == 300
    assert [r.tolist() for r in idx.query(queries)] == want
    assert idx.query(queries, count=True).tolist() == [len(w) for w in want]
    assert [r.tolist() for r in idx.query(queries, limit=2)] == [w[:2] for w in want]
    path = tmp_path / "docs.idx"
    idx.save(path)
    idx.close()
    with pytest.raises(xsect.Error, match="closed"):
        idx.query(queries)
    with xsect.Index.open(path) as opened:
        got, text = opened.query(queries, explain=True, device="cpu")
        assert [r.tolist() for r in got] == want
        assert "ran on cpu" in text
    bad = tmp_path / "bad.idx"
    bad.write_bytes(b"not an index at all, not at all")
    with pytest.raises(xsect.Error):
        xsect.Index.open(bad)
    with pytest.raises(FileNotFoundError):
        xsect.Index.open(tmp_path / "missing.idx")


def test_load(tmp_path):
    text = tmp_path / "c.txt"
    text.write_text("1 5 9\n5 9\n\n7\n")
    gz = tmp_path / "c.gz"
    gz.write_bytes(gzip.compress(text.read_bytes()))
    for p in [text, gz, str(text)]:
        assert xsect.load(p).to_lists() == [[1, 5, 9], [5, 9], [], [7]]
    with pytest.raises(FileNotFoundError):
        xsect.load(tmp_path / "missing")
    bad = tmp_path / "bad.txt"
    bad.write_text("1 2\n3 x\n")
    with pytest.raises(xsect.Error, match="2"):
        xsect.load(bad)
    with pytest.raises(OSError):
        xsect.load(tmp_path)


def test_errors():
    c = [[1, 2], [2, 3]]
    with pytest.raises(xsect.Error, match="min_overlap"):
        xsect.allpairs(c, min_overlap=-1)
    with pytest.raises(xsect.Error, match="technique|nosuch"):
        xsect.allpairs(c, technique="nosuch")
    with pytest.raises(xsect.Error, match="threshold"):
        xsect.simjoin(c, threshold="1.5")
    with pytest.raises(xsect.Error, match="measure"):
        xsect.simjoin(c, measure="hamming")
    with pytest.raises(xsect.Error, match="min_degree"):
        xsect.containment(c, min_degree="x")
    with pytest.raises(xsect.Error, match="min_support"):
        xsect.frequent_pairs(c, min_support="-3")
    with pytest.raises(xsect.Error, match="threads"):
        xsect.allpairs(c, threads=-1)
    with pytest.raises(xsect.Error, match="gpus"):
        xsect.allpairs(c, gpus="x")
    assert issubclass(xsect.Error, ValueError) and issubclass(xsect.CannotRun, xsect.Error)


def test_gpu_where_there_is_none_or_one():
    c = [[1, 2], [2, 3]]
    try:
        got = xsect.allpairs(c, device="gpu")
    except xsect.CannotRun as e:
        assert "GPU" in str(e) or "gpu" in str(e) or "CUDA" in str(e)
    else:
        assert as_dict(got) == {(0, 1): 1}


def big_random(k, size, universe, seed=1):
    rng = np.random.default_rng(seed)
    elements = np.sort(rng.choice(universe, (k, size), replace=True), axis=1)
    lists = [np.unique(row) for row in elements]
    return xsect.Collection.from_lists(lists)


def test_memory_budget():
    c = big_random(3000, 30, 100)
    # 4.5 million pairs of 12 bytes do not fit in 1 MiB.
    with pytest.raises(xsect.CannotRun, match="memory"):
        xsect.allpairs(c, min_overlap=0, memory=1)
    # Counting them does.
    assert xsect.allpairs(c, min_overlap=0, memory=1, count_only=True) == 3000 * 2999 // 2


def test_ctrl_c_cancels():
    c = big_random(40000, 100, 20000)
    for delay in [0.2, 5]:  # in the planning, in the work
        interrupted = []

        def interrupt():
            interrupted.append(time.monotonic())
            _thread.interrupt_main()

        timer = threading.Timer(delay, interrupt)
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            # Some 800 million merges: a minute or more on two cores.
            xsect.allpairs(c, min_overlap=1, technique="merge", device="cpu", count_only=True)
        took = time.monotonic() - interrupted[0]
        timer.cancel()
        # The wait gives up after 50 + 200 ms by design; the rest of the bound
        # is for a CI machine whose two cores the engine's threads keep busy
        # (0.55 s was seen there). An uncancelled run takes a minute.
        assert took < 1.5, f"the interrupted run took {took:.2f} s to stop"
    # The engine stops working: the process uses no CPU soon after.
    time.sleep(3)
    cpu = time.process_time()
    time.sleep(1)
    assert time.process_time() - cpu < 0.2
    # The engine is usable afterwards.
    assert xsect.count([1, 2, 3], [2, 3, 4]) == 2


def test_gil_released():
    c = big_random(6000, 50, 5000)
    ticks = 0
    stop = threading.Event()

    def tick():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    start = time.monotonic()
    t.start()
    xsect.allpairs(c, min_overlap=1, technique="merge", device="cpu", threads=1, count_only=True)
    took = time.monotonic() - start
    stop.set()
    t.join()
    assert took > 0.2, "the run was too short to tell"
    # A thread holding the GIL for the whole run would allow no ticks.
    assert ticks > took * 50


def test_results_outlive_inputs():
    r = xsect.allpairs([[1, 2, 3], [2, 3], [3]])
    import gc
    gc.collect()
    assert as_dict(r) == {(0, 1): 2, (0, 2): 1, (1, 2): 1}
    view = r[1:]
    del r
    gc.collect()
    assert as_dict(view) == {(0, 2): 1, (1, 2): 1}


def read_text_sets(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return [sorted(set(int(x) for x in line.split())) for line in f]


def test_real_retail_load_and_pairs():
    path = os.path.join(ROOT, "data", "retail.dat.gz")
    c = xsect.load(path)
    lists = read_text_sets(path)
    assert len(c) == len(lists) == 88162
    assert c.to_lists() == lists
    want = ref_frequent_pairs(lists, 500)
    got = xsect.frequent_pairs(c, min_support=500)
    assert {(int(p["a"]), int(p["b"])): int(p["support"]) for p in got} == want


def test_real_msweb_allpairs_and_containment():
    path = shared("containment", "msweb.data.train.sets")
    lists = read_text_sets(path)[:1500]
    c = xsect.Collection.from_lists(lists)
    ref = ref_overlaps(lists)
    assert as_dict(xsect.allpairs(c, min_overlap=2)) == {k: v for k, v in ref.items() if v >= 2}
    assert as_dict(xsect.containment(c, min_degree="0.75")) == ref_containment(lists, None, Fraction(3, 4))
    assert as_dict(xsect.simjoin(c, threshold="0.6"), "overlap") == ref_simjoin(lists, None, "jaccard", Fraction(3, 5))


def test_real_chess_frequent_pairs():
    path = shared("fimi", "chess.dat")
    tx = xsect.load(path)
    lists = read_text_sets(path)
    got = xsect.frequent_pairs(tx, min_support=0.9)
    want = ref_frequent_pairs(lists, math.ceil(Fraction(9, 10) * len(lists)))
    assert len(want) > 0
    assert {(int(p["a"]), int(p["b"])): int(p["support"]) for p in got} == want


def test_count_assume_sorted_and_fast_path():
    a = np.arange(0, 1 << 20, 3, dtype=np.uint32)
    b = np.arange(0, 1 << 20, 5, dtype=np.uint32)
    want = len(range(0, 1 << 20, 15))
    assert xsect.count(a, b) == want
    assert xsect.count(a, b, assume_sorted=True) == want
    assert xsect.count(a, b, threads=1) == want
    # Unsorted in the fast path's check: falls back to sorting copies.
    r = a[::-1].copy()
    assert xsect.count(r, b) == want
    r[-1], r[-2] = r[-2], r[-1]
    assert xsect.count(r, b, threads=2) == want
