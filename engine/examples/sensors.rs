//! Sensor readings under `Bucket`: a reading (temperature and humidity) every ten seconds
//! goes to the open hourly bucket; sealed buckets carry count, sum, min and max of each
//! measure, so a day's means read no reading and a last-hour range reads one bucket. Old
//! buckets expire without being read.

use serde::{Deserialize, Serialize};
use skewdb::typed::{ItemFields, Json};
use skewdb::{CollectionSpec, Db, ItemQuery, Layout, Options};

#[derive(Serialize, Deserialize)]
struct Sensor {
    room: String,
}

#[derive(Serialize, Deserialize)]
struct Reading {
    at: i64,
    celsius: f64,
    humidity: f64,
}

impl ItemFields for Reading {
    fn item_key(&self) -> Option<i64> {
        Some(self.at)
    }

    fn item_measures(&self) -> Vec<(&'static str, f64)> {
        vec![("temperature", self.celsius), ("humidity", self.humidity)]
    }
}

const HOUR: i64 = 3_600;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Db::open(dir.path(), Options::new())?;
    let hourly = Layout::Bucket {
        max_items: 360,
        span: Some(HOUR),
    };
    let spec = CollectionSpec::new("sensors").array_with_measures(
        "readings",
        hourly,
        ["temperature", "humidity"],
    );
    let sensors = db.create_collection(spec)?.typed::<String, Sensor, Json>();
    let readings = sensors.array::<Reading>("readings")?;
    let humidity = readings.untyped().measure_index("humidity")?;

    // A day of readings, one every ten seconds, committed an hour at a time.
    let mut batch = db.batch();
    sensors.put(&mut batch, "s1", &Sensor { room: "lab".into() })?;
    for at in (0..24 * HOUR).step_by(10) {
        let hour_of_day = (at / HOUR) as f64;
        let wave = (hour_of_day / 24.0 * std::f64::consts::TAU).sin();
        let (celsius, humidity) = (18.0 + 6.0 * wave, 0.5 - 0.2 * wave);
        let reading = Reading {
            at,
            celsius,
            humidity,
        };
        readings.push(&mut batch, "s1", &reading)?;
        if at % HOUR == HOUR - 10 {
            batch.commit()?;
        }
    }
    batch.commit()?;

    let day = readings.summary("s1", ..)?.ok_or("no sensor")?;
    println!(
        "{} readings, mean {:.2} C (min {:.2}, max {:.2}), humidity mean {:.3}",
        day.items,
        day.mean().unwrap_or(0.0),
        day.min.unwrap_or(0.0),
        day.max.unwrap_or(0.0),
        day.measure(humidity).mean().unwrap_or(0.0)
    );
    let last_hour = readings
        .items("s1", &ItemQuery::new().range(23 * HOUR..))?
        .ok_or("no sensor")?;
    let newest = last_hour.items.last().ok_or("no readings")?;
    println!(
        "last hour: {} readings, the newest {:.2} at {}",
        last_hour.items.len(),
        newest.celsius,
        newest.at
    );
    let afternoon = readings
        .summary("s1", 12 * HOUR..18 * HOUR)?
        .ok_or("no sensor")?;
    println!(
        "12:00-18:00 mean {:.2} C, humidity up to {:.3}",
        afternoon.mean().unwrap_or(0.0),
        afternoon.measure(humidity).max.unwrap_or(0.0)
    );

    // Keep twelve hours: the older sealed buckets go, read from the chunk index alone.
    let expired = sensors.untyped().expire_buckets("readings", 12 * HOUR)?;
    println!(
        "expired {} buckets holding {} readings",
        expired.buckets, expired.items
    );
    let kept = readings.summary("s1", ..)?.ok_or("no sensor")?;
    println!(
        "kept {} readings from {}",
        kept.items,
        kept.min_key.unwrap_or(0)
    );
    assert_eq!(expired.items + kept.items, day.items);
    Ok(())
}
