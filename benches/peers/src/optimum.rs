//! The RAM-limited run's yardstick: what an engine that kept exactly the records the
//! operations read, and nothing else, would read from the device with the same RAM. The
//! run's operations (the warm-up's views, then each pass's views and pages, the same ids
//! from the same seeds) are replayed over records: a view reads its product's record (the
//! body and the newest five reviews, as the hand-coded models store it); a page reads that
//! record and the next fifteen reviews as one more object (as a layout that kept them
//! together would). A record not in RAM is read from the device, its bytes and no more (as
//! if records were packed so that a read takes only what it needs).
//! Two policies over the same RAM: Belady's MIN (evict what is next read farthest ahead:
//! the optimum, for objects of one size; for mixed sizes the usual greedy form, a lower
//! bound in practice) and LRU over records. Both start cold, where the engines start after
//! their load with some of their files in the page cache: the yardstick is generous to them.

use std::collections::{BTreeSet, HashMap};

use crate::data;

/// What a record-granular cache read from the device over the run's operations.
#[derive(Clone, Copy, Debug)]
pub struct Optimum {
    /// Device bytes per operation (view or page), Belady's MIN and LRU.
    pub belady_per_operation: f64,
    pub lru_per_operation: f64,
}

/// An object an operation reads: a product's record, or the reviews of its page past it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Object {
    Record(u64),
    PageRest(u64),
}

/// The sizes of every product's two objects, from the generator.
fn sizes(products: u64) -> HashMap<Object, u64> {
    let mut sizes = HashMap::new();
    for product in data::product_stream(products) {
        let newest = product.reviews.len().saturating_sub(5);
        let record = data::encode(&product.body, &product.reviews[newest..]).len() as u64;
        let rest_start = product.reviews.len().saturating_sub(data::PAGE);
        // Each review with a 16-byte key beside it, as the history keys the models use.
        let rest: u64 = product.reviews[rest_start..newest]
            .iter()
            .map(|review| review.text.len() as u64 + 16)
            .sum();
        sizes.insert(Object::Record(product.id), record);
        sizes.insert(Object::PageRest(product.id), rest);
    }
    sizes
}

/// The objects the run reads, in order, and how many operations read them.
fn trace(products: u64, views: usize) -> (Vec<Object>, usize) {
    let mut trace = Vec::new();
    let mut operations = 0;
    let warm = data::WARM_VIEWS.min(views * crate::RUNS);
    for id in data::views(products, warm, 999) {
        trace.push(Object::Record(id));
        operations += 1;
    }
    for pass in 0..crate::RUNS as u64 {
        for id in data::views(products, views, pass) {
            trace.push(Object::Record(id));
            operations += 1;
        }
        for id in data::views(products, data::PAGES.min(views), 500 + pass) {
            trace.push(Object::Record(id));
            trace.push(Object::PageRest(id));
            operations += 1;
        }
    }
    (trace, operations)
}

/// Belady's MIN over `trace` with `ram` bytes: device bytes read.
fn belady(trace: &[Object], sizes: &HashMap<Object, u64>, ram: u64) -> u64 {
    // Where each access's object is read next (usize::MAX: never).
    let mut next_use = vec![usize::MAX; trace.len()];
    let mut last: HashMap<Object, usize> = HashMap::new();
    for (at, object) in trace.iter().enumerate().rev() {
        if let Some(&next) = last.get(object) {
            next_use[at] = next;
        }
        last.insert(*object, at);
    }
    let mut held: HashMap<Object, usize> = HashMap::new();
    let mut by_next: BTreeSet<(usize, Object)> = BTreeSet::new();
    let (mut used, mut read) = (0u64, 0u64);
    for (at, object) in trace.iter().enumerate() {
        let size = sizes[object];
        match held.get(object) {
            Some(&next) => {
                by_next.remove(&(next, *object));
            }
            None => {
                read += size;
                used += size;
            }
        }
        held.insert(*object, next_use[at]);
        by_next.insert((next_use[at], *object));
        while used > ram {
            let (_, evicted) = by_next.pop_last().expect("something held");
            held.remove(&evicted);
            used -= sizes[&evicted];
        }
    }
    read
}

/// LRU over `trace` with `ram` bytes: device bytes read.
fn lru(trace: &[Object], sizes: &HashMap<Object, u64>, ram: u64) -> u64 {
    let mut held: HashMap<Object, usize> = HashMap::new();
    let mut by_use: BTreeSet<(usize, Object)> = BTreeSet::new();
    let (mut used, mut read) = (0u64, 0u64);
    for (at, object) in trace.iter().enumerate() {
        let size = sizes[object];
        match held.get(object) {
            Some(&last) => {
                by_use.remove(&(last, *object));
            }
            None => {
                read += size;
                used += size;
            }
        }
        held.insert(*object, at);
        by_use.insert((at, *object));
        while used > ram {
            let (_, evicted) = by_use.pop_first().expect("something held");
            held.remove(&evicted);
            used -= sizes[&evicted];
        }
    }
    read
}

/// The yardstick of a run of `products` products and `views` views per pass with `ram_bytes`
/// of RAM for records.
pub fn run(products: u64, views: usize, ram_bytes: u64) -> Optimum {
    let sizes = sizes(products);
    let (trace, operations) = trace(products, views);
    let per = |bytes: u64| bytes as f64 / operations as f64;
    Optimum {
        belady_per_operation: per(belady(&trace, &sizes, ram_bytes)),
        lru_per_operation: per(lru(&trace, &sizes, ram_bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a small trace worked by hand: three objects of one size, room for two.
    #[test]
    fn belady_and_lru_count_the_misses_of_a_trace_worked_by_hand() {
        let (a, b, c) = (Object::Record(0), Object::Record(1), Object::Record(2));
        let sizes: HashMap<Object, u64> = [(a, 4096), (b, 4096), (c, 4096)].into();
        let trace = [a, b, c, a, b, c, a];
        // LRU on a cycle longer than the cache misses every time.
        assert_eq!(lru(&trace, &sizes, 2 * 4096) / 4096, 7);
        // MIN: a, b, c miss, and c (next read farthest ahead) is not kept; a and b hit; c
        // misses again and is not kept (never read again); a hits: 4 misses.
        assert_eq!(belady(&trace, &sizes, 2 * 4096) / 4096, 4);
        // Room for all: only the first reads miss.
        assert_eq!(belady(&trace, &sizes, 3 * 4096) / 4096, 3);
        assert_eq!(lru(&trace, &sizes, 3 * 4096) / 4096, 3);
    }
}
