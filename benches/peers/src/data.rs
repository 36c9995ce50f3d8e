//! The product-page workload from a fixed seed: Pareto(1.1) review counts, the largest on
//! the most viewed products, views Zipf 0.99.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Pareto, Zipf};

const SEED: u64 = 42;
/// Product views per measured pass.
pub const VIEWS: usize = 1_000_000;
/// Views before the measured passes, to fill the caches (not timed).
pub const WARM_VIEWS: usize = 200_000;
/// Show-all pages per measured pass.
pub const PAGES: usize = 20_000;
/// Reviews on the show-all page: the first page, newest first.
pub const PAGE: usize = 20;
/// A product's reviews are capped here, so that the embedded models' largest value (about
/// 140 bytes a review) stays under skewdb's 16 MiB record limit.
pub const MAX_REVIEWS: usize = 100_000;
/// Appends in the stream after the runs.
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

fn review(rng: &mut StdRng, time: i64) -> Review {
    let len = rng.random_range(60..200);
    let text = (0..len)
        .map(|i| b"abcdefghij klmnopqrstu vwxyz"[(i * 7 + len) % 28])
        .collect();
    Review { time, text }
}

/// `count` products; review counts drawn from Pareto(1.1) (at least 1, at most
/// [`MAX_REVIEWS`]) and sorted so that product 0, the most viewed, has the most.
pub fn products(count: u64) -> Vec<Product> {
    product_stream(count).collect()
}

/// The products of [`products`], made one at a time: a run that loads them a slice at a time
/// holds a slice, not all of them (the RAM-limited run's harness stays small beside the
/// engine it measures).
pub fn product_stream(count: u64) -> ProductStream {
    let mut rng = StdRng::seed_from_u64(SEED);
    let pareto = Pareto::new(1.0, 1.1).expect("pareto");
    let mut counts: Vec<usize> = (0..count)
        .map(|_| (pareto.sample(&mut rng) as usize).clamp(1, MAX_REVIEWS))
        .collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    ProductStream {
        rng,
        counts,
        next: 0,
    }
}

/// See [`product_stream`].
pub struct ProductStream {
    rng: StdRng,
    /// Review counts of every product, by id.
    counts: Vec<usize>,
    next: u64,
}

impl Iterator for ProductStream {
    type Item = Product;

    fn next(&mut self) -> Option<Product> {
        let id = self.next;
        let reviews = *self.counts.get(id as usize)?;
        self.next += 1;
        Some(Product {
            id,
            body: format!(
                "{{\"name\":\"product {id}\",\"price\":{},\"about\":\"{}\"}}",
                id % 997,
                "d".repeat(250)
            )
            .into_bytes(),
            reviews: (0..reviews as i64)
                .map(|t| review(&mut self.rng, t * 60))
                .collect(),
        })
    }
}

fn zipf(products: u64) -> Zipf<f64> {
    Zipf::new(products as f64, 0.99).expect("zipf")
}

/// `count` product ids drawn Zipf(0.99) (0 the most likely), from stream `seed`.
pub fn views(products: u64, count: usize, seed: u64) -> Vec<u64> {
    let mut rng = StdRng::seed_from_u64(SEED + 1000 + seed);
    let zipf = zipf(products);
    (0..count)
        .map(|_| zipf.sample(&mut rng) as u64 - 1)
        .collect()
}

/// New reviews after every load's own, to Zipf-drawn products: the stream appends take.
pub fn appends(products: u64) -> Vec<(u64, Review)> {
    let mut rng = StdRng::seed_from_u64(SEED + 1);
    let zipf = zipf(products);
    (0..STREAM as i64)
        .map(|i| {
            let id = zipf.sample(&mut rng) as u64 - 1;
            (id, review(&mut rng, 1_000_000_000 + i))
        })
        .collect()
}

/// A product's value when everything is embedded, or (with the hand-coded Subset) its
/// newest reviews only, laid out to be read in place: body length u32, body, review count
/// u32, then the reviews newest first, each its time i64, text length u16 and text
/// (little-endian). `reviews` is oldest first.
pub fn encode(body: &[u8], reviews: &[Review]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 8 + reviews.len() * 140);
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(&(reviews.len() as u32).to_le_bytes());
    for review in reviews.iter().rev() {
        out.extend_from_slice(&review.time.to_le_bytes());
        out.extend_from_slice(&(review.text.len() as u16).to_le_bytes());
        out.extend_from_slice(&review.text);
    }
    out
}

/// An encoded value read where it lies: nothing is copied or allocated.
pub struct InPlace<'a> {
    pub body: &'a [u8],
    pub count: usize,
    reviews: &'a [u8],
}

impl<'a> InPlace<'a> {
    pub fn new(bytes: &'a [u8]) -> InPlace<'a> {
        let u32_at =
            |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4")) as usize;
        let body_len = u32_at(0);
        InPlace {
            body: &bytes[4..4 + body_len],
            count: u32_at(4 + body_len),
            reviews: &bytes[8 + body_len..],
        }
    }

    /// The reviews, newest first: (time, text).
    pub fn newest(&self) -> impl Iterator<Item = (i64, &'a [u8])> + use<'a> {
        let mut rest = self.reviews;
        (0..self.count).map(move |_| {
            let time = i64::from_le_bytes(rest[..8].try_into().expect("8"));
            let len = u16::from_le_bytes(rest[8..10].try_into().expect("2")) as usize;
            let text = &rest[10..10 + len];
            rest = &rest[10 + len..];
            (time, text)
        })
    }
}

/// The body and reviews (oldest first) of an encoded value, copied, for a read-modify-write.
pub fn decode(bytes: &[u8]) -> (Vec<u8>, Vec<Review>) {
    let value = InPlace::new(bytes);
    let mut reviews: Vec<Review> = value
        .newest()
        .map(|(time, text)| Review {
            time,
            text: text.to_vec(),
        })
        .collect();
    reviews.reverse();
    (value.body.to_vec(), reviews)
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

/// Bytes a product page renders: the body and the newest five reviews, read in place.
pub fn rendered(value: &[u8]) -> usize {
    let value = InPlace::new(value);
    value.body.len() + value.newest().take(5).map(|(_, t)| t.len()).sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_in_place_as_encoded() {
        let reviews: Vec<Review> = (0..7)
            .map(|t| Review {
                time: t * 10,
                text: vec![b'a' + t as u8; 3 + t as usize],
            })
            .collect();
        let bytes = encode(b"body", &reviews);
        let value = InPlace::new(&bytes);
        assert_eq!((value.body, value.count), (&b"body"[..], 7));
        let times: Vec<i64> = value.newest().map(|(t, _)| t).collect();
        assert_eq!(times, vec![60, 50, 40, 30, 20, 10, 0]);
        assert_eq!(rendered(&bytes), 4 + (9 + 8 + 7 + 6 + 5));
        let (body, back) = decode(&bytes);
        assert_eq!(body, b"body");
        assert_eq!(
            back.iter().map(|r| r.time).collect::<Vec<_>>(),
            (0..7).map(|t| t * 10).collect::<Vec<_>>()
        );
        assert_eq!(back[6].text, reviews[6].text);
    }

    #[test]
    fn review_counts_are_heavy_tailed_with_the_largest_first() {
        let products = products(2_000);
        let counts: Vec<usize> = products.iter().map(|p| p.reviews.len()).collect();
        assert!(counts.windows(2).all(|w| w[0] >= w[1]));
        assert!(
            counts[0] >= 100 && counts[1_999] == 1,
            "{} {}",
            counts[0],
            counts[1_999]
        );
    }
}
