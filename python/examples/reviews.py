"""Product pages with the Subset pattern: each product keeps its 5 newest reviews inline
(one read shows the page), the whole history lives cold and pages back by cursor."""

import random
import sys
import tempfile

import skewdb


def main(path: str) -> None:
    rng = random.Random(7)
    with skewdb.open(path) as db:
        products = db.create_collection("products", {"reviews": skewdb.Subset(keep=5)})
        with db.batch() as batch:
            for p in range(100):
                batch.put("products", f"p{p}", {"name": f"product {p}", "price": 10 + p})
                # A few products draw most reviews: a heavy tail.
                for r in range(int(1000 / (p + 1))):
                    stars = rng.randint(1, 5)
                    batch.push("products", f"p{p}", "reviews",
                               {"stars": stars, "text": f"review {r}"}, value=stars)

        page = products.get("p0")
        assert page is not None
        print(f"{page['name']}: {page['reviews_count']} reviews, newest 5 inline:")
        for review in page["reviews"]:
            print("  ", review["stars"], review["text"])
        stars = products.summary("p0", "reviews")
        print(f"average {stars['mean']:.2f} over {stars['count']} reviews")

        older = products.items("p0", "reviews", newest_first=True, limit=20)
        shown = [review.payload["text"] for review in older]
        print(f"history, page 1: {len(shown)} reviews, newest first: {shown[0]}")
        after = products.items("p0", "reviews", newest_first=True, limit=20,
                               cursor=older.cursor)
        print(f"and the next page starts at {next(after).payload['text']}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as scratch:
            main(f"{scratch}/shop.db")
