"""The seeds' three programs in python/examples run and print what they say."""

import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def run(name: str, tmp_path: pathlib.Path) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), str(tmp_path / "db")],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("name", ["reviews.py", "followers.py", "sensors.py"])
def test_each_example_is_short(name):
    assert len((EXAMPLES / name).read_text().splitlines()) < 80


def test_reviews(tmp_path):
    out = run("reviews.py", tmp_path)
    assert "product 0: 1000 reviews, newest 5 inline:" in out
    assert "review 999" in out
    assert "history, page 1: 20 reviews, newest first: review 999" in out
    assert "the next page starts at review 979" in out


def test_followers(tmp_path):
    out = run("followers.py", tmp_path)
    assert "overflowed past 100 inline followers" in out
    assert "100 inline, overflowed: True" in out
    assert "a full read merges inline and overflow" in out


def test_sensors(tmp_path):
    out = run("sensors.py", tmp_path)
    assert "last hour: 60 readings from 2024-01-03 23:00" in out
    assert out.count("1440 readings") == 3
    assert "expired 96 buckets, 5760 readings rolled up" in out
    assert "s1 still sums 4320 readings (2880 of them from rollups)" in out
