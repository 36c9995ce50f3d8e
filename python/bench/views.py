"""Product-page views from Python: skewdb's native Subset against the pattern coded by
hand on sqlite3 (the standard library), py-lmdb and rocksdict.

The workload is the peers bench's (`cargo run --release -p skewdb-peers`): Pareto(1.1)
review counts (at most 100,000, the largest on the most viewed products), 60 to 200 bytes
a review, views Zipf(0.99). A view returns the product as a dict with its 5 newest
reviews. skewdb keeps them with `Subset(keep=5)`; each peer stores the product with its 5
newest reviews as one JSON value (the Subset pattern by hand) and every review in a
history table keyed by (product, time), each engine used as its docs recommend (SQLite in
WAL mode with synchronous=NORMAL and a 64 MiB cache; LMDB with its default sync; RocksDB
with a 64 MiB block cache); skewdb with a 64 MiB cache. Every engine's answers are checked
equal on a sample.

Also printed: the binding's own cost per `get`, against the same reads made in Rust
(`Collection._get_many_ns`, the engine's share without building Python objects).

    pip install ./python lmdb rocksdict
    python python/bench/views.py --products 100000
"""

import argparse
import bisect
import gc
import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Tuple

import skewdb

KEEP = 5
MAX_REVIEWS = 100_000
LETTERS = b"abcdefghij klmnopqrstu vwxyz"

Review = Tuple[int, str]


def products(count: int, seed: int = 42) -> List[List[Review]]:
    """Review lists, oldest first, the longest first (product 0 is the most viewed)."""
    rng = random.Random(seed)
    counts = sorted(
        (min(max(int(rng.paretovariate(1.1)), 1), MAX_REVIEWS) for _ in range(count)),
        reverse=True,
    )
    # A review's text depends on its length alone, as in the peers bench.
    texts = {size: bytes(LETTERS[(i * 7 + size) % 28] for i in range(size)).decode()
             for size in range(60, 200)}
    return [[(t, texts[rng.randrange(60, 200)]) for t in range(n)] for n in counts]


def zipf_views(count: int, views: int, seed: int) -> List[int]:
    weights = [1.0 / (rank + 1) ** 0.99 for rank in range(count)]
    cumulative = []
    total = 0.0
    for weight in weights:
        total += weight
        cumulative.append(total)
    rng = random.Random(seed)
    return [min(bisect.bisect_left(cumulative, rng.random() * total), count - 1)
            for _ in range(views)]


def page(pid: int, reviews: List[Review]) -> Dict[str, Any]:
    newest = reviews[-KEEP:]
    return {"_id": pid, "name": f"product {pid}", "price": 10 + pid % 90,
            "reviews": [{"t": t, "text": text} for t, text in newest],
            "reviews_count": len(reviews)}


class Skewdb:
    name = "skewdb native Subset"

    def __init__(self, path: str) -> None:
        self.db = skewdb.open(path, cache="64MiB", durability="buffered")
        self.products = self.db.create_collection(
            "products", {"reviews": skewdb.Subset(keep=KEEP)}, item_keys={"reviews": "t"})

    def load(self, catalog: List[List[Review]]) -> None:
        for start in range(0, len(catalog), 1000):
            with self.db.batch() as batch:
                for pid in range(start, min(start + 1000, len(catalog))):
                    batch.put("products", pid,
                              {"name": f"product {pid}", "price": 10 + pid % 90})
                    for t, text in catalog[pid]:
                        batch.push("products", pid, "reviews", {"t": t, "text": text})
        self.db.checkpoint()

    def view(self, pid: int) -> Dict[str, Any]:
        doc = self.products.get(pid)
        assert doc is not None
        return doc

    def close(self) -> None:
        self.db.close()


class Sqlite:
    name = "sqlite3 hand-coded Subset"

    def __init__(self, path: str) -> None:
        self.conn = sqlite3.connect(os.path.join(path, "db.sqlite"))
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA cache_size=-65536")
        self.conn.execute("CREATE TABLE products (id INTEGER PRIMARY KEY, doc TEXT)")
        self.conn.execute("CREATE TABLE reviews (product INTEGER, t INTEGER, text TEXT, "
                          "PRIMARY KEY (product, t)) WITHOUT ROWID")

    def load(self, catalog: List[List[Review]]) -> None:
        with self.conn:
            for pid, reviews in enumerate(catalog):
                self.conn.execute("INSERT INTO products VALUES (?, ?)",
                                  (pid, json.dumps(page(pid, reviews))))
                self.conn.executemany("INSERT INTO reviews VALUES (?, ?, ?)",
                                      ((pid, t, text) for t, text in reviews))

    def view(self, pid: int) -> Dict[str, Any]:
        row = self.conn.execute("SELECT doc FROM products WHERE id = ?", (pid,)).fetchone()
        return json.loads(row[0])  # type: ignore[no-any-return]

    def close(self) -> None:
        self.conn.close()


class Lmdb:
    name = "py-lmdb hand-coded Subset"

    def __init__(self, path: str) -> None:
        import lmdb
        self.env = lmdb.open(path, map_size=16 << 30, max_dbs=2)
        self.pages = self.env.open_db(b"products")
        self.history = self.env.open_db(b"reviews")

    def load(self, catalog: List[List[Review]]) -> None:
        with self.env.begin(write=True) as txn:
            for pid, reviews in enumerate(catalog):
                key = pid.to_bytes(8, "big")
                txn.put(key, json.dumps(page(pid, reviews)).encode(), db=self.pages)
                for t, text in reviews:
                    txn.put(key + t.to_bytes(8, "big"), text.encode(), db=self.history)

    def view(self, pid: int) -> Dict[str, Any]:
        with self.env.begin(db=self.pages) as txn:
            return json.loads(txn.get(pid.to_bytes(8, "big")))  # type: ignore[no-any-return]

    def close(self) -> None:
        self.env.close()


class Rocks:
    name = "rocksdict hand-coded Subset"

    def __init__(self, path: str) -> None:
        import rocksdict
        options = rocksdict.Options(raw_mode=True)
        table = rocksdict.BlockBasedOptions()
        table.set_block_cache(rocksdict.Cache(64 << 20))
        options.set_block_based_table_factory(table)
        options.create_if_missing(True)
        self.db = rocksdict.Rdict(path, options)
        self.history = self.db.create_column_family("reviews", options)

    def load(self, catalog: List[List[Review]]) -> None:
        import rocksdict
        for start in range(0, len(catalog), 1000):
            batch = rocksdict.WriteBatch(raw_mode=True)
            for pid in range(start, min(start + 1000, len(catalog))):
                key = pid.to_bytes(8, "big")
                batch.put(key, json.dumps(page(pid, catalog[pid])).encode())
                for t, text in catalog[pid]:
                    batch.put(key + t.to_bytes(8, "big"), text.encode(),
                              self.db.get_column_family_handle("reviews"))
            self.db.write(batch)
        self.db.flush()

    def view(self, pid: int) -> Dict[str, Any]:
        return json.loads(self.db[pid.to_bytes(8, "big")])  # type: ignore[no-any-return]

    def close(self) -> None:
        self.history.close()
        self.db.close()


def same(a: Dict[str, Any], b: Dict[str, Any]) -> bool:
    """A view's content: the product's reviews, newest 5, and their count."""
    return ([r["text"] for r in a["reviews"]], a["reviews_count"]) == (
        [r["text"] for r in b["reviews"]], b["reviews_count"])


def measure(view: Callable[[int], Any], views: List[int]) -> Tuple[float, float, float]:
    """Views/s over the whole pass, and p50 and p99 of single views in microseconds."""
    clock = time.perf_counter_ns
    times = []
    gc.disable()
    start = clock()
    for pid in views:
        began = clock()
        view(pid)
        times.append(clock() - began)
    elapsed = clock() - start
    gc.enable()
    times.sort()
    return (len(views) / (elapsed / 1e9), times[len(times) // 2] / 1e3,
            times[int(len(times) * 0.99)] / 1e3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--products", type=int, default=100_000)
    parser.add_argument("--views", type=int, default=300_000)
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()

    began = time.time()
    catalog = products(args.products)
    total_reviews = sum(len(r) for r in catalog)
    warm = zipf_views(args.products, args.views // 5, seed=1)
    passes = [zipf_views(args.products, args.views, seed=2 + n) for n in range(args.passes)]
    engines: List[Any] = [Skewdb, Sqlite]
    for extra in (Lmdb, Rocks):
        try:
            __import__("lmdb" if extra is Lmdb else "rocksdict")
            engines.append(extra)
        except ImportError:
            print(f"skipped {extra.name}: not installed", file=sys.stderr)
    rows = []
    reference = None
    overhead = None
    for engine in engines:
        scratch = tempfile.mkdtemp(prefix="skewdb-bench-")
        try:
            store = engine(scratch)
            load_began = time.perf_counter()
            store.load(catalog)
            load_s = time.perf_counter() - load_began
            sample = [store.view(pid) for pid in range(0, args.products, 997)]
            if reference is None:
                reference = sample
            assert all(same(a, b) for a, b in zip(sample, reference)), engine.name
            for pid in warm:
                store.view(pid)
            results = [measure(store.view, views) for views in passes]
            rate = statistics.median(r[0] for r in results)
            p50 = statistics.median(r[1] for r in results)
            p99 = statistics.median(r[2] for r in results)
            if engine is Skewdb:
                keys = passes[0]
                rust_ns = store.products._get_many_ns(keys) / len(keys)
                overhead = (1e9 / rate, rust_ns)
            rows.append((engine.name, rate, p50, p99, load_s))
            store.close()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    best_peer = max(r[1] for r in rows if not r[0].startswith("skewdb"))
    print(f"Product views from Python, {args.products:,} products ({total_reviews:,} "
          f"reviews), views Zipf(0.99): {args.views:,} views a pass, median of "
          f"{args.passes} passes after {len(warm):,} to warm; Python "
          f"{sys.version.split()[0]}, skewdb {skewdb.__version__}; "
          f"`python python/bench/views.py --products {args.products}`.\n")
    print("| engine | views/s | vs best peer | view p50 us | view p99 us | load s |")
    print("|---|---|---|---|---|---|")
    for name, rate, p50, p99, load_s in rows:
        print(f"| {name} | {rate:,.0f} | {rate / best_peer:.2f}x | {p50:.1f} | {p99:.1f} "
              f"| {load_s:.1f} |")
    if overhead is not None:
        per_view, rust_ns = overhead
        print(f"\nskewdb `get` from Python: {per_view:,.0f} ns a view (the loop and timer "
              f"included); the same reads in Rust: {rust_ns:,.0f} ns; the binding's share "
              f"(call, key, BSON to dict): {per_view - rust_ns:,.0f} ns.")
    print(f"\nWhole run {time.time() - began:.0f} s.")


if __name__ == "__main__":
    main()
