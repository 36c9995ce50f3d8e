//! The product-page workload from a fixed seed, shaped like the reviews seed: review
//! counts heavy-tailed with the largest on the most viewed products, views Zipf 0.99.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};

const SEED: u64 = 42;
/// Operations per measured run.
pub const OPS: usize = 20_000;
/// Appends in the stream after the mixed operations.
pub const STREAM: usize = 1_000;

#[derive(Clone, Debug)]
pub struct Review {
    /// When it was written (seconds); reviews of a product are in this order.
    pub time: i64,
    pub text: Vec<u8>,
}

#[derive(Clone, Debug)]
pub struct Product {
    pub id: u64,
    pub body: Vec<u8>,
    /// Oldest first.
    pub reviews: Vec<Review>,
}

#[derive(Clone, Debug)]
pub enum Op {
    View(u64),
    Append(u64, Review),
    ShowAll(u64),
}

fn review(rng: &mut StdRng, time: i64) -> Review {
    let len = rng.random_range(60..200);
    let text = (0..len)
        .map(|i| b"abcdefghij klmnopqrstu vwxyz"[(i * 7 + len) % 28])
        .collect();
    Review { time, text }
}

/// Product `rank` (0 the most viewed) gets about `2000 / (rank + 1)^0.75` reviews.
pub fn products(count: u64) -> Vec<Product> {
    let mut rng = StdRng::seed_from_u64(SEED);
    (0..count)
        .map(|id| {
            let reviews = (2000.0 / ((id + 1) as f64).powf(0.75)).ceil() as i64;
            Product {
                id,
                body: format!(
                    "{{\"name\":\"product {id}\",\"price\":{},\"about\":\"{}\"}}",
                    id % 997,
                    "d".repeat(250)
                )
                .into_bytes(),
                reviews: (0..reviews).map(|t| review(&mut rng, t * 60)).collect(),
            }
        })
        .collect()
}

/// The mixed operations and the append stream of run `run`.
pub fn operations(products: &[Product], run: u64) -> (Vec<Op>, Vec<(u64, Review)>) {
    let mut rng = StdRng::seed_from_u64(SEED + 1 + run);
    let zipf = Zipf::new(products.len() as f64, 0.99).expect("zipf");
    let mut next_time = 1_000_000_000 + run as i64 * 10_000_000;
    let pick = |rng: &mut StdRng| zipf.sample(rng) as u64 - 1;
    let ops = (0..OPS)
        .map(|_| {
            let id = pick(&mut rng);
            match rng.random_range(0..100) {
                0..94 => Op::View(id),
                94..99 => {
                    next_time += 1;
                    Op::Append(id, review(&mut rng, next_time))
                }
                _ => Op::ShowAll(id),
            }
        })
        .collect();
    let stream = (0..STREAM)
        .map(|_| {
            next_time += 1;
            let id = pick(&mut rng);
            (id, review(&mut rng, next_time))
        })
        .collect();
    (ops, stream)
}

/// A product's value when everything is embedded, or (with `keep`) its newest reviews only:
/// body length u32, body, review count u32, then per review time i64, length u16, text.
pub fn encode(body: &[u8], reviews: &[Review]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 8 + reviews.len() * 140);
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(&(reviews.len() as u32).to_le_bytes());
    for review in reviews {
        out.extend_from_slice(&review.time.to_le_bytes());
        out.extend_from_slice(&(review.text.len() as u16).to_le_bytes());
        out.extend_from_slice(&review.text);
    }
    out
}

/// The body and reviews of an encoded value.
pub fn decode(bytes: &[u8]) -> (Vec<u8>, Vec<Review>) {
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4")) as usize;
    let body_len = u32_at(0);
    let body = bytes[4..4 + body_len].to_vec();
    let mut at = 4 + body_len;
    let count = u32_at(at);
    at += 4;
    let mut reviews = Vec::with_capacity(count);
    for _ in 0..count {
        let time = i64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
        let len = u16::from_le_bytes(bytes[at + 8..at + 10].try_into().expect("2")) as usize;
        reviews.push(Review {
            time,
            text: bytes[at + 10..at + 10 + len].to_vec(),
        });
        at += 10 + len;
    }
    (body, reviews)
}

/// The history table's key: product id then time, both big-endian (times are positive).
pub fn history_key(id: u64, time: i64) -> [u8; 16] {
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&id.to_be_bytes());
    key[8..].copy_from_slice(&time.to_be_bytes());
    key
}

/// Keeps the newest `keep` reviews in `newest` (oldest first) after adding `review`;
/// returns the one that left, if any.
pub fn keep_newest(newest: &mut Vec<Review>, review: Review, keep: usize) -> Option<Review> {
    let at = newest.partition_point(|r| r.time <= review.time);
    newest.insert(at, review);
    (newest.len() > keep).then(|| newest.remove(0))
}

/// Bytes a product page renders: the body and the newest five reviews.
pub fn rendered(body: &[u8], newest: &[Review]) -> usize {
    body.len()
        + newest
            .iter()
            .rev()
            .take(5)
            .map(|r| r.text.len())
            .sum::<usize>()
}
