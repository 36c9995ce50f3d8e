"""Followers with the Outlier pattern: most accounts have a few followers, kept inline;
a celebrity's array overflows past the cap to cold storage and the account is flagged,
and every read merges both."""

import random
import sys
import tempfile

import skewdb


def main(path: str) -> None:
    rng = random.Random(11)
    with skewdb.open(path) as db:
        users = db.create_collection("users", {"followers": skewdb.Outlier(cap=100)})
        with db.batch() as batch:
            for u in range(1000):
                batch.put("users", f"u{u}", {"name": f"user {u}"})
            for u in range(1000):
                # Pareto-distributed follower counts: a few accounts have thousands.
                count = min(int(rng.paretovariate(1.1)) - 1, 20000)
                for f in range(count):
                    batch.push("users", f"u{u}", "followers", {"who": f"u{rng.randrange(1000)}"},
                               key=f)

        flagged = users.outliers("followers")
        print(f"{len(flagged)} of 1000 accounts overflowed past 100 inline followers")
        celebrity, total = max(flagged, key=lambda pair: pair[1])
        profile = users.get(celebrity)
        assert profile is not None
        print(f"{celebrity}: {total} followers, {len(profile['followers'])} inline, "
              f"overflowed: {profile['followers_has_overflow']}")
        everyone = sum(1 for _ in users.items(celebrity, "followers"))
        assert everyone == total
        print(f"a full read merges inline and overflow: {everyone} followers")

        with db.transaction() as tx:
            tx["users"].push(celebrity, "followers", {"who": "newcomer"}, key=total)
        after = users.get(celebrity)
        assert after is not None
        print(f"after a follow: {after['followers_count']}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as scratch:
            main(f"{scratch}/social.db")
