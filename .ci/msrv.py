#!/usr/bin/env python3
"""Checks the engine's declared rust-version against what it builds with.

Only one toolchain is available to CI, so the check is made of the parts that do not need
the older compiler: every crate the `skewdb` library builds with (all features, normal and
build dependencies, as locked) must declare a rust-version no newer than the engine's, and
clippy's `incompatible_msrv` lint (run by `.ci/run` with `-D warnings`) refuses any standard
library item stabilised after it. Exits 1 naming every crate that asks for more.
"""
import json
import subprocess
import sys


def version(text):
    parts = [int(part) for part in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def main():
    metadata = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked", "--all-features"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    packages = {p["id"]: p for p in metadata["packages"]}
    nodes = {n["id"]: n for n in metadata["resolve"]["nodes"]}
    engine = next(p for p in metadata["packages"] if p["name"] == "skewdb")
    declared = engine.get("rust_version")
    if not declared:
        print("skewdb declares no rust-version")
        return 1
    seen, stack = set(), [engine["id"]]
    while stack:
        package = stack.pop()
        if package in seen:
            continue
        seen.add(package)
        for dep in nodes[package]["deps"]:
            if any(kind["kind"] in (None, "build") for kind in dep["dep_kinds"]):
                stack.append(dep["pkg"])
    newer = sorted(
        f"{packages[p]['name']} {packages[p]['version']} needs Rust {packages[p]['rust_version']}"
        for p in seen
        if packages[p].get("rust_version")
        and version(packages[p]["rust_version"]) > version(declared)
    )
    for line in newer:
        print(line)
    if newer:
        print(f"skewdb declares rust-version {declared}: raise it or pin the crates above")
        return 1
    print(f"rust-version {declared}: {len(seen) - 1} dependencies declare no newer Rust")
    return 0


if __name__ == "__main__":
    sys.exit(main())
