"""Sensor readings with the Bucket pattern: a stream grouped into hour buckets of at most
60 readings, each with count/sum/min/max; ranges and windowed aggregates skip what they do
not need; expired buckets roll up into daily summaries."""

import datetime
import math
import sys
import tempfile

import skewdb

START = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)


def main(path: str) -> None:
    with skewdb.open(path) as db:
        sensors = db.create_collection(
            "sensors",
            {"readings": skewdb.Bucket(max_items=60, span="1h", measures=["temp", "hum"])},
            rollups={"readings": "1d"},
        )
        with db.batch() as batch:
            for minute in range(3 * 24 * 60):  # three days of minute readings
                at = START + datetime.timedelta(minutes=minute)
                temp = 20 + 5 * math.sin(minute / 1440 * 2 * math.pi)
                for sensor in ("s1", "s2"):
                    batch.push("sensors", sensor, "readings", key=at,
                               measures={"temp": temp, "hum": 0.4})

        last_hour = START + datetime.timedelta(days=3, hours=-1)
        readings = list(sensors.items("s1", "readings", start=last_hour))
        print(f"last hour: {len(readings)} readings from {readings[0].key:%Y-%m-%d %H:%M}")

        for day, summary in sensors.summary("s1", "readings", every="1d"):
            temp = summary["measures"]["temp"]
            print(f"{day:%Y-%m-%d}: {temp['count']} readings, temp "
                  f"{temp['min']:.1f}..{temp['max']:.1f}, mean {temp['mean']:.2f}")

        expired = sensors.expire_buckets("readings", START + datetime.timedelta(days=2))
        print(f"expired {expired['buckets']} buckets, {expired['rolled_up']} readings "
              "rolled up into daily summaries")
        kept = sensors.summary("s1", "readings")
        print(f"s1 still sums {kept['count']} readings "
              f"({kept['rolled_up']} of them from rollups)")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as scratch:
            main(f"{scratch}/sensors.db")
