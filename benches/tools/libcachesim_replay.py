#!/usr/bin/env python3
"""Replays the working-set bench's kept cache traces in libCacheSim, an outside simulator.

    cargo run --release -p skewdb-cli -- bench --out DIR --traces TRACES
    pip install libcachesim
    python3 benches/tools/libcachesim_replay.py [--every] TRACES [NAME-SUBSTRING ...]

Each trace is cut to its warm-up and measured requests (traces.csv lists both) and fed
to each libCacheSim policy with the run's byte budget, its `drop` lines (objects the live
cache dropped because no reader could ask for them again) as removals; misses are counted
over the measured requests only, as the bench counts them, and printed beside the bench's
own figures when
a JSON file of them (`skewdb --json bench ...`, one object per line) is given with
--ours FILE. With --every, the other online policies libCacheSim has are replayed too (ARC,
LIRS, CLOCK-Pro, 2Q, MQ, LRU-K, GDSF, LHD, Hyperbolic, Cacheus,
CLOCK-2Q+): each is fed the same requests, and none is told the next use.
"""

import csv
import json
import sys

import libcachesim as lcs

NEVER = 1 << 62


EVERY = [
    "ARC", "LIRS", "ClockPro", "TwoQ", "MQ", "LRUK", "GDSF", "LHD",
    "Hyperbolic", "Cacheus", "Clock2QPlus",
]


def policies(budget, every):
    more = {name.lower(): getattr(lcs, name)(budget) for name in EVERY} if every else {}
    return more | {
        "lru": lcs.LRU(budget),
        "s3-fifo (paper: 2 hits to main)": lcs.S3FIFO(budget),
        "s3-fifo (1 hit to main)": lcs.S3FIFO(budget, move_to_main_threshold=1),
        "sieve": lcs.Sieve(budget),
        "w-tinylfu": lcs.WTinyLFU(budget),
        "belady": lcs.Belady(budget),
        "belady-size": lcs.BeladySize(budget),
    }


def replay(path, warmup, measured, budget, every):
    # Requests, and before each the objects dropped since the one before it.
    trace, drops, dropped = [], [], []
    with open(path) as f:
        reader = csv.DictReader(f)
        for row in reader:
            if row["tier"] == "drop":
                dropped.append(int(row["object_id"]))
                continue
            trace.append((int(row["object_id"]), int(row["object_bytes"])))
            drops.append(dropped)
            dropped = []
            if len(trace) == warmup + measured:
                break
    next_use = [NEVER] * len(trace)
    last = {}
    for i in range(len(trace) - 1, -1, -1):
        next_use[i] = last.get(trace[i][0], NEVER)
        last[trace[i][0]] = i
    misses = {}
    for name, cache in policies(budget, every).items():
        count = 0
        for i, (obj, size) in enumerate(trace):
            for gone in drops[i]:
                cache.remove(gone)
            req = lcs.Request()
            req.obj_id = obj
            req.obj_size = size
            req.clock_time = i
            req.next_access_vtime = next_use[i]
            hit = cache.get(req)
            if not hit and i >= warmup:
                count += 1
        misses[name] = count
    return misses


def main():
    args = sys.argv[1:]
    ours = {}
    if "--ours" in args:
        at = args.index("--ours")
        with open(args[at + 1]) as f:
            for line in f:
                run = json.loads(line)
                ours[(run["workload"], run["layout"], run["budget_bytes"])] = run
        del args[at : at + 2]
    every = "--every" in args
    if every:
        args.remove("--every")
    folder, wanted = args[0], args[1:]
    with open(f"{folder}/traces.csv") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        if wanted and not any(w in row["file"] for w in wanted):
            continue
        budget, warmup, measured = (
            int(row["budget_bytes"]),
            int(row["warmup_requests"]),
            int(row["measured_requests"]),
        )
        misses = replay(f"{folder}/{row['file']}", warmup, measured, budget, every)
        print(row["file"], json.dumps(misses), flush=True)


if __name__ == "__main__":
    main()
