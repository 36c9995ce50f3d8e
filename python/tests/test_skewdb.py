"""The Python module through its public names: every method, every exception, threads,
transactions under contention, a process killed in the middle of writes."""

import datetime
import inspect
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import skewdb

UTC = datetime.timezone.utc
T0 = datetime.datetime(2024, 1, 1, tzinfo=UTC)


@pytest.fixture
def db(tmp_path):
    with skewdb.open(tmp_path / "db", cache="8MiB") as db:
        yield db


@pytest.fixture
def products(db):
    return db.create_collection(
        "products", {"reviews": skewdb.Subset(keep=3), "tags": skewdb.Embed()}
    )


def test_documents_round_trip_every_value_type(products):
    body = {
        "name": "lamp",
        "price": 25.5,
        "stock": 7,
        "big": 2**40,
        "on_sale": True,
        "note": None,
        "raw": b"\x00\x01",
        "dims": [1, 2.5, "cm"],
        "maker": {"name": "acme", "since": T0},
    }
    products.put("p1", body)
    got = products.get("p1")
    assert got["_id"] == "p1"
    for field, value in body.items():
        assert got[field] == value, field
    assert got["reviews"] == [] and got["reviews_count"] == 0
    assert got["reviews_has_overflow"] is False
    assert products.get("absent") is None
    assert "p1" in products and "absent" not in products
    # Keys are any document value: an int key is another parent than its text.
    products.put(7, {"name": "seven"})
    assert products.get(7)["name"] == "seven" and products.get("7") is None


def test_bad_documents_and_keys_are_refused(products):
    with pytest.raises(TypeError):
        products.put("p1", "not a dict")
    with pytest.raises(TypeError):
        products.put("p1", {"when": object()})
    with pytest.raises(TypeError):
        products.put("p1", {1: "int field name"})
    with pytest.raises(skewdb.InvalidInput) as refused:
        products.put("p1", {"_id": "other"})
    assert refused.value.kind == "invalid_input"
    assert isinstance(refused.value, ValueError)
    with pytest.raises(skewdb.InvalidInput):
        products.put("p1", {"reviews": [{"stars": 1}]})
    with pytest.raises(skewdb.KeyTooLarge):
        products.put("k" * 2000, {})


def test_subset_keeps_the_newest_inline_and_pages_the_history(products):
    for n in range(10):
        products.push("p1", "reviews", {"stars": n % 5, "n": n}, value=n % 5)
    got = products.get("p1")
    assert [r["n"] for r in got["reviews"]] == [7, 8, 9]
    assert got["reviews_count"] == 10 and got["reviews_has_overflow"] is True
    newest = products.items("p1", "reviews", newest_first=True, limit=4)
    assert [item.key for item in newest] == [9, 8, 7, 6]
    rest = products.items("p1", "reviews", newest_first=True, cursor=newest.cursor)
    assert [item.payload["n"] for item in rest] == [5, 4, 3, 2, 1, 0]
    assert rest.cursor is None
    # A cursor of one order is refused by the other.
    with pytest.raises(skewdb.InvalidCursor):
        list(products.items("p1", "reviews", cursor=newest.cursor))
    ranged = products.items("p1", "reviews", start=2, end=5)
    assert [(i.key, i.value) for i in ranged] == [(2, 2.0), (3, 3.0), (4, 4.0)]
    item = next(iter(products.items("p1", "reviews")))
    assert item.measures == {"value": 0.0} and item.cursor
    assert "Item(key=0" in repr(item)
    summary = products.summary("p1", "reviews")
    assert (summary["count"], summary["sum"], summary["min"], summary["max"]) == (
        10, 20.0, 0.0, 4.0)
    assert summary["measures"]["value"]["count"] == 10
    assert products.summary("p1", "reviews", start=5)["count"] == 5
    with pytest.raises(skewdb.NotFound) as missing:
        products.items("absent", "reviews")
    assert isinstance(missing.value, KeyError) and missing.value.kind == "not_found"
    with pytest.raises(skewdb.NotFound):
        products.summary("absent", "reviews")
    with pytest.raises(skewdb.UnknownField):
        products.items("p1", "nope")


def test_items_are_read_lazily_in_pages(db, products):
    with db.batch() as batch:
        for n in range(1000):
            batch.push("products", "p1", "reviews", {"n": n})
    items = products.items("p1", "reviews")
    first = [next(items) for _ in range(300)]
    assert [i.payload["n"] for i in first] == list(range(300))
    # The cursor continues after the last item taken, wherever the page ended.
    after = products.items("p1", "reviews", cursor=items.cursor, limit=2)
    assert [i.key for i in after] == [300, 301]
    assert after.cursor is not None
    assert sum(1 for _ in items) == 700
    assert items.cursor is None


def test_remove_and_delete(db, products):
    for n in range(5):
        products.push("p1", "reviews", {"n": n})
    products.remove("p1", "reviews", 4)
    assert products.get("p1")["reviews"] == [{"n": 1}, {"n": 2}, {"n": 3}]
    products.delete("p1")
    assert products.get("p1") is None
    products.delete("p1")


def test_outliers_overflow_past_the_cap(db):
    users = db.create_collection("users", {"followers": skewdb.Outlier(cap=3)})
    for n in range(5):
        users.push("celebrity", "followers", {"who": f"u{n}"})
    users.push("someone", "followers", {"who": "u0"})
    assert users.outliers("followers") == [("celebrity", 5)]
    got = users.get("celebrity")
    assert len(got["followers"]) == 3 and got["followers_has_overflow"] is True
    assert [i.payload["who"] for i in users.items("celebrity", "followers")] == [
        f"u{n}" for n in range(5)]
    with pytest.raises(skewdb.WrongLayout):
        users.expire_buckets("followers", 0)


def test_time_series_take_and_give_datetimes(db):
    sensors = db.create_collection(
        "sensors",
        {"readings": skewdb.Bucket(max_items=60, span="1h", measures=["temp", "hum"])},
        rollups={"readings": "1d"},
        item_keys={"readings": "t"},
    )
    batch = db.batch()
    for minute in range(180):
        at = T0 + datetime.timedelta(minutes=minute)
        batch.push("sensors", "s1", "readings", {"t": at, "temp": 20.0 + minute % 7,
                                                 "hum": 0.5})
    assert len(batch) == 180
    batch.commit()
    assert len(batch) == 0
    windows = sensors.summary("s1", "readings", every="1h")
    assert [at for at, _ in windows] == [T0 + datetime.timedelta(hours=h) for h in range(3)]
    assert all(s["count"] == 60 for _, s in windows)
    assert windows[0][1]["measures"]["hum"]["sum"] == 30.0
    same = sensors.summary("s1", "readings", every=datetime.timedelta(hours=1))
    assert same == windows
    last_hour = sensors.items("s1", "readings", start=T0 + datetime.timedelta(hours=2))
    readings = list(last_hour)
    assert len(readings) == 60 and readings[0].key == T0 + datetime.timedelta(hours=2)
    assert readings[0].measures == {"temp": 21.0, "hum": 0.5}
    # A bare reading: no element, its key and values stated.
    sensors.push("s1", "readings", key=T0 + datetime.timedelta(hours=5),
                 measures={"temp": 1.0, "hum": 0.0})
    assert sensors.summary("s1", "readings", start=T0 + datetime.timedelta(hours=5))[
        "sum"] == 1.0
    expired = sensors.expire_buckets("readings", T0 + datetime.timedelta(hours=2))
    assert expired == {"buckets": 2, "items": 120, "rolled_up": 120}
    assert sensors.summary("s1", "readings")["count"] == 181
    with pytest.raises(skewdb.InvalidInput):
        sensors.summary("s1", "readings", every="soon")
    with pytest.raises(skewdb.InvalidInput):
        db.collection("sensors").push("s1", "readings", {"t": T0}, value=float("nan"))
    with pytest.raises(skewdb.InvalidInput):
        db.create_collection("plain", {"n": skewdb.Embed()}).items("x", "n", start=T0)


def test_collections_of_bytes(db):
    raw = db.create_collection("raw", {"log": skewdb.Bucket(max_items=4)}, bytes=True)
    raw.put(b"k\x00", b"\xff body")
    raw.push(b"k\x00", "log", b"payload", key=5, value=1.5)
    raw.push("k\x00", "log", "text payload", key=6)
    got = raw.get(b"k\x00")
    assert got["key"] == b"k\x00" and got["body"] == b"\xff body"
    assert [i.payload for i in got["arrays"]["log"]["items"]] == [b"payload",
                                                                   b"text payload"]
    assert raw.scan()[0][0] == b"k\x00"
    with pytest.raises(TypeError):
        raw.put("k", {"a": 1})
    with pytest.raises(skewdb.InvalidInput):
        db.create_collection("x", bytes=True, key_field="sku")


def test_scan_in_key_order_over_a_range(products):
    for key in ["c", "a", "b", "d"]:
        products.put(key, {"k": key})
    assert [k for k, _ in products.scan()] == ["a", "b", "c", "d"]
    assert [k for k, _ in products.scan(start="b", end="d")] == ["b", "c"]


def test_schema_changes_and_errors(db, products):
    assert db.collections() == ["products"]
    assert products.arrays == {"reviews": "subset:3", "tags": "embed"}
    assert db.create_collection(
        "products", {"reviews": skewdb.Subset(keep=3), "tags": skewdb.Embed()}).name == \
        "products"
    with pytest.raises(skewdb.SchemaConflict):
        db.create_collection("products", {"reviews": skewdb.Embed()})
    with pytest.raises(skewdb.InvalidInput):
        db.create_collection("bad", {"a": "subset:3"})
    with pytest.raises(skewdb.InvalidName):
        db.create_collection("")
    for n in range(6):
        products.push("p1", "reviews", {"n": n})
    moved = db.alter("products", set_layouts={"reviews": skewdb.Subset(keep=5)},
                     add_arrays={"log": skewdb.Reference()}, drop_arrays=["tags"])
    assert moved.arrays == {"reviews": "subset:5", "log": "reference"}
    assert db.wait_for_migrations() == []
    assert len(db.collection("products").get("p1")["reviews"]) == 5
    renamed = db.alter("products", rename="catalog")
    assert renamed.name == "catalog" and db.collections() == ["catalog"]
    # A handle made before the rename refuses to write to whatever has the name now.
    with pytest.raises(skewdb.UnknownCollection):
        products.put("p2", {})
    db.drop("catalog")
    assert db.collections() == []
    with pytest.raises(skewdb.UnknownCollection):
        db["catalog"]


def test_batches_commit_atomically_or_not_at_all(db, products):
    with db.batch() as batch:
        batch.put("products", "p1", {"name": "lamp"})
        batch.push("products", "p1", "reviews", {"n": 1})
        assert products.get("p1") is None
    assert products.get("p1")["reviews_count"] == 1
    with pytest.raises(RuntimeError):
        with db.batch() as batch:
            batch.put("products", "p2", {"name": "desk"})
            raise RuntimeError("nothing of the batch is written")
    assert products.get("p2") is None
    with db.batch() as batch:
        batch.delete("products", "p1")
    assert products.get("p1") is None
    with pytest.raises(skewdb.UnknownCollection):
        db.batch().put("nope", "k", {})


def test_transactions_read_their_writes_and_commit_or_roll_back(db, products):
    products.put("p1", {"n": 1})
    with db.transaction() as tx:
        inside = tx.collection("products")
        inside.put("p2", {"n": 2})
        inside.push("p1", "reviews", {"n": 1})
        assert inside.get("p2")["n"] == 2
        assert products.get("p2") is None
        assert [i.payload for i in inside.items("p1", "reviews")] == [{"n": 1}]
    assert products.get("p2")["n"] == 2
    with pytest.raises(RuntimeError):
        with db.transaction() as tx:
            tx["products"].put("p3", {})
            raise RuntimeError("rolled back")
    assert products.get("p3") is None
    tx = db.transaction()
    tx["products"].delete("p2")
    tx.rollback()
    assert products.get("p2") is not None
    with pytest.raises(skewdb.Closed):
        tx.commit()
    # Two transactions that read and write the same parent: the second to commit
    # conflicts.
    first, second = db.transaction(), db.transaction()
    for tx in (first, second):
        body = tx["products"].get("p1")
        tx["products"].put("p1", {"n": body["n"] + 1})
    first.commit()
    with pytest.raises(skewdb.Conflict) as conflict:
        second.commit()
    assert conflict.value.kind == "conflict"
    assert products.get("p1")["n"] == 2


def test_transact_retries_under_contention(db):
    counters = db.create_collection("counters")
    counters.put("c", {"n": 0})
    attempts = []

    def increment(tx):
        attempts.append(1)
        body = tx["counters"].get("c")
        time.sleep(0.001)
        tx["counters"].put("c", {"n": body["n"] + 1})

    def worker():
        for _ in range(25):
            db.transact(increment, attempts=1000)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counters.get("c")["n"] == 100
    assert len(attempts) >= 100
    assert db.transact(lambda tx: tx["counters"].get("c")["n"]) == 100


def test_threads_commit_and_read_at_once(db, products):
    errors = []

    def writer(w):
        try:
            for n in range(200):
                products.push(f"p{w}", "reviews", {"n": n})
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    def reader():
        try:
            for _ in range(300):
                for w in range(3):
                    got = products.get(f"p{w}")
                    if got is not None:
                        assert len(got["reviews"]) <= 3
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for w in range(3):
        assert products.get(f"p{w}")["reviews_count"] == 200


def test_snapshots_do_not_see_later_commits(db, products):
    products.put("p1", {"v": 1})
    with db.snapshot() as snapshot:
        products.put("p1", {"v": 2})
        products.put("p2", {"v": 2})
        assert snapshot["products"].get("p1")["v"] == 1
        assert snapshot.collection("products").get("p2") is None
        assert snapshot.collections() == ["products"]
        with pytest.raises(skewdb.ReadOnly):
            snapshot["products"].put("p3", {})
    with pytest.raises(skewdb.Closed):
        snapshot.collection("products")


def test_a_record_over_16_mib_is_refused(db):
    docs = db.create_collection("docs")
    with pytest.raises(skewdb.RecordTooLarge) as refused:
        docs.put("big", {"blob": b"x" * (17 * 1024 * 1024)})
    assert refused.value.kind == "record_too_large"
    assert docs.get("big") is None
    assert skewdb.MAX_RECORD_BYTES == 16 * 1024 * 1024


def test_stats_backup_restore_and_close(tmp_path, db, products):
    products.put("p1", {"name": "lamp"})
    stats = db.stats()
    assert "cache" in stats and "commits" in stats
    report = db.backup(tmp_path / "backup.skewdb")
    assert report["parents"] == 1 and report["collections"] == 1
    db.checkpoint()
    db.persist()
    db.verify()
    db.compact()
    with skewdb.restore(tmp_path / "backup.skewdb", tmp_path / "restored") as copy:
        assert copy["products"].get("p1")["name"] == "lamp"
    assert "open" in repr(db) and db.path.endswith("db")
    db.close()
    assert "closed" in repr(db)
    with pytest.raises(skewdb.Closed):
        db.collections()
    with pytest.raises(skewdb.Closed):
        products.put("p2", {})
    db.close()


def test_open_options_and_its_errors(tmp_path):
    path = tmp_path / "db"
    with skewdb.open(path, cache=1 << 20, durability="buffered") as db:
        db.create_collection("c").put("k", {"a": 1})
        with pytest.raises(skewdb.Locked):
            skewdb.open(path)
    with skewdb.open(path, read_only=True) as db:
        assert db["c"].get("k") == {"_id": "k", "a": 1}
        with pytest.raises(skewdb.ReadOnly):
            db["c"].put("k", {"a": 2})
    with pytest.raises(skewdb.InvalidInput):
        skewdb.open(path, durability="sometimes")
    with pytest.raises(skewdb.InvalidInput):
        skewdb.open(path, cache="lots")
    with pytest.raises(skewdb.NoDatabase):
        skewdb.open(tmp_path / "absent", read_only=True)


def test_every_error_kind_has_its_class():
    kinds = [
        "not_found", "invalid_input", "io", "corruption", "record_too_large",
        "key_too_large", "batch_too_large", "unknown_collection", "unknown_field",
        "unknown_measure", "wrong_layout", "invalid_item", "schema_conflict",
        "invalid_name", "invalid_schema", "locked", "invalid_option", "write_failed",
        "read_only", "no_database", "unsupported_version", "range_cuts_rollup",
        "invalid_cursor", "closed", "conflict", "codec",
    ]
    from skewdb._errors import class_of
    for kind in kinds:
        cls = class_of(kind)
        assert cls is not skewdb.Error and issubclass(cls, skewdb.Error), kind
        assert cls.kind == kind
        assert getattr(skewdb, cls.__name__) is cls
    assert class_of("a kind of a later build") is skewdb.Error


KILLED_WRITER = """
import sys, skewdb
db = skewdb.open(sys.argv[1])
c = db.create_collection("c", {"log": skewdb.Subset(keep=2)})
n = 0
while True:
    c.push("p", "log", {"n": n})
    c.put(f"k{n}", {"n": n})
    print(n, flush=True)
    n += 1
"""


def test_a_killed_process_loses_nothing_acknowledged(tmp_path):
    path = tmp_path / "db"
    writer = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(path)],
                              stdout=subprocess.PIPE, text=True)
    acknowledged = -1
    for line in writer.stdout:
        acknowledged = int(line)
        if acknowledged >= 150:
            break
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    # Lines printed after the one read were acknowledged too: read them all.
    for line in writer.stdout.read().splitlines():
        acknowledged = int(line)
    with skewdb.open(path) as db:
        c = db["c"]
        for n in range(acknowledged + 1):
            assert c.get(f"k{n}")["n"] == n
        assert c.get("p")["log_count"] >= acknowledged + 1
        db.verify()


def test_every_public_name_has_a_docstring():
    for name in skewdb.__all__:
        value = getattr(skewdb, name)
        if name.isupper() or name.startswith("__"):
            continue
        assert value.__doc__, name
        if isinstance(value, type):
            for attribute, member in vars(value).items():
                if attribute.startswith("_"):
                    continue
                if callable(member) or inspect.isdatadescriptor(member):
                    assert member.__doc__, f"{name}.{attribute}"


SHARED_HANDLES = r"""
import sys, threading, time
import skewdb


def joined(threads):
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


db = skewdb.open(sys.argv[1], cache="1MiB")
products = db.create_collection("products", {"reviews": skewdb.Subset(keep=3)})
with db.batch() as batch:
    for n in range(3000):
        batch.push("products", "p", "reviews", {"n": n})
# One iterator taken from by several threads: each item is given once.
shared = products.items("p", "reviews")
taken = []


def take():
    for item in shared:
        taken.append(item.key)


joined([threading.Thread(target=take) for _ in range(4)])
assert sorted(taken) == list(range(3000))
# One batch filled by several threads while another commits it.
batch = db.batch()


def fill(w):
    for n in range(200):
        batch.put("products", f"w{w}-{n}", {"n": n})


def commit():
    for _ in range(20):
        batch.commit()


joined([threading.Thread(target=fill, args=(w,)) for w in range(3)]
       + [threading.Thread(target=commit)])
batch.commit()
assert sum(1 for _ in products.scan(start="w", end="x")) == 600
# One transaction read and written by several threads.
tx = db.transaction()


def use(w):
    for n in range(100):
        tx["products"].put(f"t{w}-{n}", {"n": n})
        tx["products"].get(f"t{w}-{n}")


joined([threading.Thread(target=use, args=(w,)) for w in range(3)])
tx.commit()
assert products.get("t2-99")["n"] == 99
# The database closed while another thread commits: the writer stops with Closed.
stopped = []


def write():
    try:
        for n in range(100000):
            products.put(f"late{n}", {"n": n})
    except skewdb.Closed:
        stopped.append(True)


writer = threading.Thread(target=write)
writer.start()
time.sleep(0.05)
db.close()
writer.join()
assert stopped == [True]
print("done")
"""


def test_shared_handles_never_deadlock_across_threads(tmp_path):
    # In a process of its own: a deadlock holds the GIL, so only a timeout from outside
    # can end it and fail the test.
    done = subprocess.run([sys.executable, "-c", SHARED_HANDLES, str(tmp_path / "db")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr
