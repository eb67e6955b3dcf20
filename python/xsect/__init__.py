"""xsect for Python: exact, multi-core (and GPU) set intersection, numpy in and out.

Sets are collections of 32-bit unsigned integers. A :class:`Collection` holds
k sets flat, as xsect does (the CSR layout): ``offsets`` (uint64, k+1 of them,
starting at 0) and ``elements`` (uint32), set i being
``elements[offsets[i]:offsets[i+1]]``, strictly increasing.

The work runs in xsect's Go engine, loaded from the shared library
``libxsect.so`` beside this file with ctypes. Input arrays are read in place
(no copy when they already have the right dtype and are contiguous); result
arrays are the engine's own memory, handed over without a copy and released
when the last numpy array using them is collected.

While the engine works the GIL is released (the calls into the library are
ctypes calls, which release it) and the calling thread waits for the work in
slices of 50 ms; Ctrl-C (KeyboardInterrupt) between two slices cancels the work
in the engine (its context is cancelled) and raises KeyboardInterrupt at once.
A run cancelled while the planner still measures the problem (which the Go
API cannot interrupt; a second or two on large inputs) finishes planning in
the background, its inputs kept alive until then (the interpreter's exit
waits for it), and stops before the work.

Every workload takes, as xsect's command line does, ``technique=`` (``"auto"``
or a name), ``device=`` (``"cpu"``, ``"gpu"`` or ``"auto"``), ``gpus=``
(``"all"``, the first N as an int, or a list of ordinals), ``threads=`` (0: one
per core) and ``memory=`` (a budget in MiB; 0: half of the machine's memory);
``explain=True`` returns ``(result, text)``, the text being the planner's
explanation; ``count_only=True`` returns the number of pairs, an int, without
naming them.

Errors: bad input or options raise :class:`Error` (a ``ValueError``) with
xsect's message; files that cannot be opened or read raise ``OSError``; work
that cannot run here (over the memory budget, a device the machine lacks)
raises :class:`CannotRun` (an :class:`Error`), before the work where the plan
predicts it, or as soon as the pairs found outgrow what the budget leaves for
them.
"""

import atexit
import ctypes
import fractions
import json
import numbers
import os
import threading

import numpy as np

__all__ = [
    "Error", "CannotRun", "Collection", "Index", "load", "count", "intersect",
    "allpairs", "containment", "simjoin", "frequent_pairs",
    "PAIR", "SIMILAR_PAIR", "FREQUENT_PAIR",
]


class Error(ValueError):
    """Bad input or options, with xsect's message."""


class CannotRun(Error):
    """Work that xsect cannot run here: over the memory budget (raise
    ``memory=``, or ask ``count_only=True``), or a device or technique that
    does not apply."""


#: The dtype of allpairs' and containment's results: set i of the first
#: collection, set j of the second (or i < j in a self-join), their overlap.
PAIR = np.dtype([("i", "<u4"), ("j", "<u4"), ("count", "<u4")])
#: The dtype of simjoin's results: the overlap, and the similarity as a float
#: (the overlap again for measure="overlap"). Padded as the engine's records.
SIMILAR_PAIR = np.dtype({"names": ["i", "j", "overlap", "similarity"],
                         "formats": ["<u4", "<u4", "<u4", "<f8"],
                         "offsets": [0, 4, 8, 16], "itemsize": 24})
#: The dtype of frequent_pairs' results: items a < b and their support.
FREQUENT_PAIR = np.dtype([("a", "<u4"), ("b", "<u4"), ("support", "<u4")])

_LIBRARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libxsect.so")
if not os.path.exists(_LIBRARY):
    raise ImportError(f"xsect: {_LIBRARY} is missing: install the package (pip install ./python), "
                      "which builds it, rather than import it from the source folder")
_lib = ctypes.CDLL(_LIBRARY)
_lib.xsect_start.restype = ctypes.c_int64
_lib.xsect_start.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                             ctypes.POINTER(ctypes.c_int64), ctypes.c_int]
_lib.xsect_wait.restype = ctypes.c_int
_lib.xsect_wait.argtypes = [ctypes.c_int64, ctypes.c_int]
_lib.xsect_cancel.restype = None
_lib.xsect_cancel.argtypes = [ctypes.c_int64]
_lib.xsect_meta.restype = ctypes.c_void_p
_lib.xsect_meta.argtypes = [ctypes.c_int64, ctypes.POINTER(ctypes.c_int64)]
_lib.xsect_buffer.restype = ctypes.c_void_p
_lib.xsect_buffer.argtypes = [ctypes.c_int64, ctypes.c_int, ctypes.POINTER(ctypes.c_int64)]
_lib.xsect_release.restype = None
_lib.xsect_release.argtypes = [ctypes.c_int64]
_lib.xsect_count_cpu.restype = ctypes.c_int64
_lib.xsect_count_cpu.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int,
                                 ctypes.c_int]
_lib.xsect_gpu_available.restype = ctypes.c_int
_lib.xsect_gpu_available.argtypes = []
_lib.xsect_index_close.restype = None
_lib.xsect_index_close.argtypes = [ctypes.c_int64]

# The slice of a wait between two chances for Python to handle a signal.
_WAIT_MS = 50


class _Job:
    """One operation of the engine: started at once, waited for with
    :meth:`wait`; its result arrays keep it alive, and it is released (its
    memory given back to the engine) when the last of them is collected."""

    def __init__(self, op, params, arrays):
        _prune()
        self._arrays = arrays  # the inputs, read in place until done
        n = len(arrays)
        ptrs = (ctypes.c_void_p * max(n, 1))(*[a.ctypes.data if a.nbytes else None for a in arrays])
        lens = (ctypes.c_int64 * max(n, 1))(*[a.nbytes for a in arrays])
        self.id = _lib.xsect_start(op.encode(), json.dumps(params).encode(), ptrs, lens, n)

    def wait(self):
        """Waits for the job and returns its outcome (a dict), raising its
        error. KeyboardInterrupt (or any exception raised while it waits)
        cancels it: the engine stops within milliseconds once it runs, but
        the planning before (the public Go API's NewPlan takes no context)
        goes on to its end. So the job is waited for 200 ms at most, then
        left to finish in the background, its inputs kept alive until it has,
        and the exception raised."""
        try:
            while not _lib.xsect_wait(self.id, _WAIT_MS):
                pass
        except BaseException:
            _lib.xsect_cancel(self.id)
            if not _lib.xsect_wait(self.id, 200):
                with _abandoned_lock:
                    _abandoned.append(self)
            raise
        self._arrays = None
        n = ctypes.c_int64()
        p = _lib.xsect_meta(self.id, ctypes.byref(n))
        meta = json.loads(ctypes.string_at(p, n.value))
        code, msg = meta["code"], meta.get("message", "")
        if code == 1:
            raise Error(msg)
        if code == 2:
            if meta.get("errno"):
                raise OSError(meta["errno"], msg)
            raise OSError(msg)
        if code == 3:
            raise CannotRun(msg)
        if code == 4:
            raise KeyboardInterrupt(msg)
        return meta

    def buffer(self, i, dtype):
        """Result array i as a numpy array of dtype, in place."""
        n = ctypes.c_int64()
        p = _lib.xsect_buffer(self.id, i, ctypes.byref(n))
        if not p or n.value == 0:
            return np.empty(0, dtype)
        mem = (ctypes.c_char * n.value).from_address(p)
        mem.job = self  # the array's base holds the job
        return np.frombuffer(mem, dtype)

    def __del__(self):
        if _lib is not None and getattr(self, "id", 0):
            _lib.xsect_release(self.id)


# Jobs cancelled but not finished yet, kept (with their inputs) until they
# are: see _Job.wait.
_abandoned = []
_abandoned_lock = threading.Lock()


def _prune():
    """Forgets the abandoned jobs that have finished."""
    with _abandoned_lock:
        _abandoned[:] = [j for j in _abandoned if not _lib.xsect_wait(j.id, 0)]


@atexit.register
def _finish_abandoned():
    """Waits, at the interpreter's exit, for the abandoned jobs still
    running: they read their inputs in place, and the exit frees them. A
    cancelled job stops within milliseconds once it runs; its planning may
    take a second or two more."""
    with _abandoned_lock:
        jobs = list(_abandoned)
    for j in jobs:
        while not _lib.xsect_wait(j.id, _WAIT_MS):
            pass


def _run(op, params, arrays):
    job = _Job(op, params, arrays)
    return job, job.wait()


def _u32(x, what):
    """x as a contiguous 1-d uint32 array, without a copy where it is one."""
    if isinstance(x, np.ndarray) and x.dtype == np.uint32 and x.ndim == 1:
        return np.ascontiguousarray(x)
    a = np.asarray(x)
    if a.ndim != 1:
        raise Error(f"{what}: want a 1-d array of integers, got {a.ndim} dimensions")
    if a.size == 0:
        return np.empty(0, np.uint32)
    if a.dtype.kind not in "iu":
        raise Error(f"{what}: want integers in [0, 2^32), got dtype {a.dtype}")
    lo, hi = int(a.min()), int(a.max())
    if lo < 0 or hi > 0xFFFFFFFF:
        bad = lo if lo < 0 else hi
        raise Error(f"{what}: {bad} is not in [0, 2^32-1]")
    return np.ascontiguousarray(a, dtype=np.uint32)


def _ratio(x, what):
    """A threshold as the engine reads it, exactly: a str as is ("0.7",
    "2/3"), an int, a Fraction as "n/d", a float in its shortest decimal."""
    if isinstance(x, bool):
        raise Error(f"{what}: want a number, got {x!r}")
    if isinstance(x, str):
        return x
    if isinstance(x, fractions.Fraction):
        return f"{x.numerator}/{x.denominator}"
    if isinstance(x, numbers.Integral):
        return str(int(x))
    if isinstance(x, numbers.Real):
        return repr(float(x))
    raise Error(f"{what}: want a number or a str, got {type(x).__name__}")


def _gpus(g):
    if g is None or g == "all":
        return "all"
    if isinstance(g, str):
        return g
    if isinstance(g, numbers.Integral):
        return str(int(g))
    g = [int(x) for x in g]
    return ",".join(map(str, g)) + ("," if len(g) == 1 else "")


def _common(technique, device, gpus, threads, memory, explain, count_only=False):
    if not isinstance(threads, numbers.Integral) or isinstance(threads, bool):
        raise Error(f"threads={threads!r}: want an int")
    if not isinstance(memory, numbers.Integral) or isinstance(memory, bool):
        raise Error(f"memory={memory!r}: want an int (MiB)")
    return {"technique": technique or "auto", "device": device or "auto", "gpus": _gpus(gpus),
            "threads": int(threads), "memory": int(memory), "explain": bool(explain),
            "count_only": bool(count_only)}


def _explained(result, meta, explain):
    return (result, meta.get("explain", "")) if explain else result


class Collection:
    """k sets of uint32, stored flat: ``offsets`` (uint64, k+1) and
    ``elements`` (uint32); set i is ``elements[offsets[i]:offsets[i+1]]``,
    strictly increasing. ``len(c)`` is k, ``c[i]`` set i (a view)."""

    __slots__ = ("offsets", "elements")

    def __init__(self, offsets, elements):
        """Wraps arrays known to form a collection; use :meth:`from_csr` or
        :meth:`from_lists`, which check them."""
        self.offsets = offsets
        self.elements = elements

    @classmethod
    def from_csr(cls, offsets, elements):
        """The collection of the CSR arrays offsets (k+1 non-decreasing
        integers from 0 to len(elements)) and elements (each set strictly
        increasing), used in place when they are contiguous uint64 and
        uint32 arrays: they must not change while xsect uses them. Raises
        :class:`Error` if they do not form a collection."""
        o = np.asarray(offsets)
        if o.ndim != 1 or (o.size and o.dtype.kind not in "iu"):
            raise Error("offsets: want a 1-d array of integers")
        if o.size and int(o.min()) < 0:
            raise Error("offsets: negative offset")
        o = np.ascontiguousarray(o, dtype=np.uint64)
        e = _u32(elements, "elements")
        c = cls(o, e)
        _run("validate", {}, [o, e])
        return c

    @classmethod
    def from_lists(cls, lists):
        """The collection of the given sets (iterables of ints in [0, 2^32)),
        each sorted and deduplicated."""
        lists = [s.ravel() if isinstance(s, np.ndarray) else np.asarray(list(s)) for s in lists]
        sizes = np.array([s.size for s in lists], dtype=np.int64)
        k = len(lists)
        if k == 0 or sizes.sum() == 0:
            return cls(np.zeros(k + 1, np.uint64), np.empty(0, np.uint32))
        vals = _u32(np.concatenate([s for s in lists if s.size]), "sets").astype(np.uint64)
        ids = np.repeat(np.arange(k, dtype=np.uint64), sizes)
        key = np.unique((ids << np.uint64(32)) | vals)  # sorted, deduplicated
        elements = (key & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        counts = np.bincount((key >> np.uint64(32)).astype(np.int64), minlength=k)
        offsets = np.zeros(k + 1, np.uint64)
        np.cumsum(counts, out=offsets[1:])
        return cls(offsets, elements)

    def __len__(self):
        return len(self.offsets) - 1

    def __getitem__(self, i):
        k = len(self)
        if not isinstance(i, numbers.Integral):
            raise TypeError(f"set index must be an int, not {type(i).__name__}")
        if i < 0:
            i += k
        if not 0 <= i < k:
            raise IndexError(f"set {i} out of range for {k} sets")
        return self.elements[int(self.offsets[i]):int(self.offsets[i + 1])]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    @property
    def sizes(self):
        """The sizes of the sets, an int64 array."""
        return np.diff(self.offsets).astype(np.int64)

    def to_lists(self):
        """The sets as lists of ints."""
        return [s.tolist() for s in self]

    def __repr__(self):
        return f"<xsect.Collection of {len(self)} sets, {self.elements.size} elements>"

    def _arrays(self):
        return [self.offsets, self.elements]


def _coll(c, what="collection"):
    if isinstance(c, Collection):
        return c
    if isinstance(c, (str, bytes, os.PathLike)):
        raise Error(f"{what}: want a Collection or a list of sets; use xsect.load for a file")
    return Collection.from_lists(c)


def _path(path):
    p = os.fsdecode(os.fspath(path))
    if "\x00" in p:
        raise Error(f"path {p!r} holds a NUL byte")
    return p


def load(path, *, memory=0):
    """Reads a collection file as xsect's command line does: text (one set a
    line, integers separated by spaces or tabs), gzip-compressed text, or
    xsect's binary format, told apart by content. memory= bounds it (MiB;
    0: half of the machine's memory). Raises OSError for a file that cannot
    be read, :class:`Error` for bad content (naming the line and column)."""
    job, _ = _run("load", {"path": _path(path), "memory": int(memory)}, [])
    return Collection(job.buffer(0, np.uint64), job.buffer(1, np.uint32))


_gpu = None


def _gpu_available():
    """Whether xsect can use a GPU here (asked once)."""
    global _gpu
    if _gpu is None:
        _gpu = bool(_lib.xsect_gpu_available())
    return _gpu


def _pairwise(op, a, b, technique, device, gpus, threads, explain, assume_sorted):
    params = _common(technique, device, gpus, threads, 0, explain)
    params["assume_sorted"] = bool(assume_sorted)
    return _run(op, params, [_u32(a, "a"), _u32(b, "b")])


def count(a, b, *, assume_sorted=False, technique="auto", device="auto", gpus="all", threads=0, explain=False):
    """|a ∩ b| for two sets of uint32 (numpy arrays, or sequences of ints).

    They need not be sorted: each is checked (a linear scan, on every core
    for long ones), used in place if strictly increasing, and otherwise
    sorted and deduplicated into a copy first (O(n log n)).
    assume_sorted=True skips the check: the caller vouches that both are
    strictly increasing, and gets a wrong count if they are not.
    technique= names one of the pairwise methods (xsect intersect --technique
    list); on the CPU, auto splits the work by value range over threads.
    The common case (CPU, technique auto, no explain) is one synchronous call
    into the engine, with the GIL released, that cannot be interrupted (a
    count of two sets of a million elements takes about a millisecond)."""
    if (not explain and technique in (None, "auto") and isinstance(threads, numbers.Integral)
            and 0 <= threads <= 4096 and (device == "cpu" or (device in (None, "auto") and not _gpu_available()))):
        x, y = _u32(a, "a"), _u32(b, "b")
        n = _lib.xsect_count_cpu(x.ctypes.data, x.size, y.ctypes.data, y.size, int(threads), 0 if assume_sorted else 1)
        if n >= 0:
            return int(n)
        # Not sorted: the job sorts copies.
    _, meta = _pairwise("count", a, b, technique, device, gpus, threads, explain, assume_sorted)
    return _explained(int(meta["n"]), meta, explain)


def intersect(a, b, *, assume_sorted=False, technique="auto", device="auto", gpus="all", threads=0,
              explain=False):
    """a ∩ b, strictly increasing, as a uint32 array; a, b and assume_sorted
    as for :func:`count`."""
    job, meta = _pairwise("intersect", a, b, technique, device, gpus, threads, explain, assume_sorted)
    return _explained(job.buffer(0, np.uint32), meta, explain)


def _join(op, c, other, params, dtype):
    c = _coll(c)
    arrays = c._arrays()
    if other is not None:
        arrays += _coll(other, "other")._arrays()
        params["other"] = True
    job, meta = _run(op, params, arrays)
    if params["count_only"]:
        return _explained(int(meta["n"]), meta, params["explain"])
    return _explained(job.buffer(0, dtype), meta, params["explain"])


def allpairs(c, other=None, min_overlap=1, *, technique="auto", device="auto", gpus="all",
             threads=0, memory=0, explain=False, count_only=False):
    """The pairs of sets sharing at least min_overlap elements (0: every
    pair): of c with itself (i < j), or of c with other (i in c, j in
    other). Returns a structured array of dtype :data:`PAIR` (i, j, count),
    sorted by i then j."""
    if not isinstance(min_overlap, numbers.Integral) or isinstance(min_overlap, bool) or min_overlap < 0:
        raise Error(f"min_overlap={min_overlap!r}: want an int >= 0")
    params = _common(technique, device, gpus, threads, memory, explain, count_only)
    params["min_overlap"] = int(min_overlap)
    return _join("allpairs", c, other, params, PAIR)


def containment(c, other=None, min_degree=0.8, *, technique="auto", device="auto", gpus="all",
                threads=0, memory=0, explain=False, count_only=False):
    """The set containment join: the pairs of nonempty sets whose degree of
    containment |Si ∩ Sj| / min(|Si|, |Sj|) is at least min_degree, compared
    exactly ("0.8", a Fraction, or a float read as its shortest decimal:
    0.8 is 4/5). Returns dtype :data:`PAIR` (i, j, count), sorted."""
    params = _common(technique, device, gpus, threads, memory, explain, count_only)
    params["min_degree"] = _ratio(min_degree, "min_degree")
    return _join("containment", c, other, params, PAIR)


def simjoin(c, other=None, measure="jaccard", threshold="0.7", distinct=False, *, technique="auto",
            device="auto", gpus="all", threads=0, memory=0, explain=False, count_only=False):
    """The exact set similarity join: pairs whose measure ("jaccard",
    "cosine", "dice" or "overlap") reaches threshold, compared exactly
    (a str such as "0.7" or "2/3", a Fraction, or a float read as its
    shortest decimal; a positive int for "overlap"): a pair exactly at it
    is in. distinct=True counts equal sets once, as their smallest id.
    Returns dtype :data:`SIMILAR_PAIR` (i, j, overlap, similarity), sorted."""
    params = _common(technique, device, gpus, threads, memory, explain, count_only)
    params.update(measure=str(measure), threshold=_ratio(threshold, "threshold"), distinct=bool(distinct))
    return _join("simjoin", c, other, params, SIMILAR_PAIR)


def frequent_pairs(tx, min_support=100, *, technique="auto", device="auto", gpus="all", threads=0,
                   memory=0, explain=False, count_only=False):
    """The pairs of items a < b occurring together in at least min_support
    transactions of tx (a Collection, one transaction a set): an int, or a
    fraction of the transactions below 1 (0.001, "0.1%"), rounded up.
    Returns dtype :data:`FREQUENT_PAIR` (a, b, support), sorted."""
    if isinstance(min_support, bool) or not isinstance(min_support, (str, numbers.Real)):
        raise Error(f"min_support={min_support!r}: want an int, a fraction below 1, or a str")
    params = _common(technique, device, gpus, threads, memory, explain, count_only)
    params["min_support"] = min_support if isinstance(min_support, str) else _ratio(min_support, "min_support")
    return _join("pairs", tx, None, params, FREQUENT_PAIR)


class Index:
    """An inverted index for conjunctive (AND) queries: for every term id,
    the increasing ids of the documents holding it. Build one with
    :meth:`build`, or open a saved one (also one from ``xsect index build``)
    with :meth:`open`."""

    def __init__(self, handle, meta, keep=None):
        self._handle = handle
        self._lock = threading.Lock()
        self._keep = keep
        info = meta.get("info", {})
        self.docs = info.get("docs", 0)  #: the number of documents
        self.terms = info.get("terms", 0)  #: the number of terms
        self.postings = info.get("postings", 0)  #: the total length of the lists
        self._description = meta.get("explain", "")

    @classmethod
    def build(cls, docs, *, dense_ratio=0, memory=0):
        """The index of docs (a Collection, or a list of sets of term ids):
        document i is docs[i]."""
        docs = _coll(docs, "docs")
        _, meta = _run("index_build", {"dense_ratio": int(dense_ratio), "memory": int(memory)}, docs._arrays())
        return cls(meta["n"], meta, docs)

    @classmethod
    def open(cls, path):
        """Opens a saved index (memory-mapped and verified); OSError if it
        cannot be read, :class:`Error` if it is not an index."""
        _, meta = _run("index_open", {"path": _path(path)}, [])
        return cls(meta["n"], meta)

    def _h(self):
        if not self._handle:
            raise Error("the index is closed")
        return self._handle

    def save(self, path):
        """Writes the index to path, in xsect's index format: under a
        temporary name renamed into place, so an index open on path keeps
        its old content."""
        _run("index_save", {"index": self._h(), "path": _path(path)}, [])

    def query(self, queries, limit=None, count=False, *, device="auto", threads=0, explain=False):
        """Answers each query (a list of term ids, or a Collection of them):
        a list of uint32 arrays of the matching documents' ids, increasing
        (the first limit of each), or with count=True an int64 array of
        their numbers. Terms the index does not hold match nothing; so does
        an empty query."""
        if isinstance(queries, Collection):
            q = queries
        else:
            q = Collection.from_lists(queries)
        if limit is None:
            limit = -1
        elif not isinstance(limit, numbers.Integral) or limit < 0:
            raise Error(f"limit={limit!r}: want an int >= 0, or None for all")
        params = _common("auto", device, "all", threads, 0, explain, bool(count))
        params.update(index=self._h(), limit=int(limit))
        job, meta = _run("query", params, q._arrays())
        counts = job.buffer(0, np.int64)
        if count:
            return _explained(counts, meta, explain)
        ids = job.buffer(1, np.uint32)
        ends = np.cumsum(np.minimum(counts, limit) if limit >= 0 else counts)
        return _explained(np.split(ids, ends[:-1]) if len(counts) else [], meta, explain)

    def close(self):
        """Closes the index (also done when it is collected)."""
        h, self._handle = self._handle, 0
        if h and _lib is not None:
            _lib.xsect_index_close(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def __repr__(self):
        return f"<xsect.Index {self._description}>"
