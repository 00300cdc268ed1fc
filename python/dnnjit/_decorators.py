"""The cuDNN frontend's conveniences: the graph() context manager and the @jit and
@graph_cache decorators."""
import collections
import contextlib
import functools
import threading

from ._enums import data_type, heur_mode
from ._graph import Tensor, pygraph


@contextlib.contextmanager
def graph(handle=None, name=None, io_data_type=data_type.HALF, intermediate_data_type=data_type.FLOAT,
          compute_data_type=data_type.FLOAT):
    """with cudnn.graph(handle) as (g, _): ... gives a new pygraph (half I/O, float
    intermediates and compute unless told otherwise) and an empty list."""
    yield pygraph(name=name, io_data_type=io_data_type, intermediate_data_type=intermediate_data_type,
                  compute_data_type=compute_data_type, handle=handle), []


def jit(heur_modes=heur_mode.A):
    """Decorates a function returning (graph, [tensors]): the graph is built with
    `heur_modes` unless it already has plans (a graph_cache hit), and the call returns
    (graph, [uids]), the uids being what execute's variant pack takes.

    Usable as @jit(heur_modes=[cudnn.heur_mode.A]) or bare @jit."""
    if callable(heur_modes) and not isinstance(heur_modes, int):
        return jit()(heur_modes)
    modes = list(heur_modes) if isinstance(heur_modes, (list, tuple)) else [heur_modes]

    def decorator(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            g, tensors = fn(*args, **kwargs)
            if g.get_execution_plan_count() <= 0:
                g.build(modes)
            return g, [t.get_uid() if isinstance(t, Tensor) else t for t in tensors]
        return wrapper
    return decorator


def graph_cache(key_fn, maxsize=256):
    """Caches a graph-making function's result under key_fn(*args, **kwargs): a call with
    the same key returns the same (graph, tensors) without rebuilding. At most maxsize
    entries; the least recently used goes first. The wrapper has cache_info() (hits,
    misses, size) and cache_clear()."""
    if maxsize is not None and maxsize < 1:
        raise ValueError(f"graph_cache: maxsize must be at least 1, not {maxsize}")

    def decorator(fn):
        cache = collections.OrderedDict()
        lock = threading.Lock()
        stats = {"hits": 0, "misses": 0}

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            key = key_fn(*args, **kwargs)
            with lock:
                if key in cache:
                    cache.move_to_end(key)
                    stats["hits"] += 1
                    return cache[key]
                stats["misses"] += 1
            # Built outside the lock: building can take long and may itself use the cache.
            result = fn(*args, **kwargs)
            with lock:
                cache[key] = result
                cache.move_to_end(key)
                while maxsize is not None and len(cache) > maxsize:
                    cache.popitem(last=False)
            return result

        def cache_info():
            with lock:
                return {"hits": stats["hits"], "misses": stats["misses"], "size": len(cache), "maxsize": maxsize}

        def cache_clear():
            with lock:
                cache.clear()
                stats["hits"] = stats["misses"] = 0

        wrapper.cache_info = cache_info
        wrapper.cache_clear = cache_clear
        return wrapper
    return decorator
