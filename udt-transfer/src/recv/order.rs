//! A striped file's BLAKE3, computed from the ranges as they arrive, in file order: the range
//! that continues the hashed prefix is hashed from its buffer at once, one that comes early is
//! held (its buffer kept, up to a bound) until the prefix reaches it. What could not be held
//! is read back from the file once every range is in.
//!
//! Invariants: the hash covers exactly `[0, hashed)` of the file, in order; at most one thread
//! hashes at a time (it takes the hasher out, and puts it back with the new `hashed`); held
//! buffers start past `hashed` and never overlap (their ranges do not); at most `limit` bytes
//! are held.

use std::collections::BTreeMap;

/// The in-order hash of one file.
#[derive(Debug)]
pub struct InOrder {
    /// `None` while a thread hashes.
    hasher: Option<Box<blake3::Hasher>>,
    /// The hash covers the bytes before this offset.
    hashed: u64,
    held: BTreeMap<u64, (Vec<u8>, usize)>,
    held_bytes: usize,
    limit: usize,
}

/// What to do with a range just written.
pub enum Offer {
    /// Hash it now with this hasher, then call [`InOrder::next`].
    Hash(Box<blake3::Hasher>),
    /// Its buffer is held (the caller got a spare one) or it will be read back: nothing to do.
    Done,
}

impl InOrder {
    /// A hash that covers the first `start` bytes with `hasher`, holding at most `limit` bytes.
    pub fn new(hasher: blake3::Hasher, start: u64, limit: usize) -> InOrder {
        InOrder { hasher: Some(Box::new(hasher)), hashed: start, held: BTreeMap::new(), held_bytes: 0, limit }
    }

    /// The first `len` bytes of `buf` were written at `offset`: hash them now if they continue
    /// the prefix and nobody is hashing, else hold the buffer (swapped for `spare()`) if there
    /// is room.
    pub fn offer(
        &mut self,
        offset: u64,
        buf: &mut Vec<u8>,
        len: usize,
        spare: impl FnOnce() -> Vec<u8>,
    ) -> Offer {
        if offset == self.hashed {
            if let Some(hasher) = self.hasher.take() {
                return Offer::Hash(hasher);
            }
        }
        if offset >= self.hashed && self.held_bytes + len <= self.limit {
            self.held_bytes += len;
            self.held.insert(offset, (std::mem::replace(buf, spare()), len));
        }
        Offer::Done
    }

    /// The hashing thread hashed up to `at`: the held buffer that continues there (hash it, then
    /// call again), or `None` and the hasher is put back.
    pub fn next(
        &mut self,
        hasher: Box<blake3::Hasher>,
        at: u64,
    ) -> Result<(Box<blake3::Hasher>, Vec<u8>, usize), ()> {
        match self.held.remove(&at) {
            Some((buf, len)) => {
                self.held_bytes -= len;
                Ok((hasher, buf, len))
            }
            None => {
                self.hashed = at;
                self.hasher = Some(hasher);
                Err(())
            }
        }
    }

    /// Once every range is in (nobody hashing): the hasher and where its prefix ends (the rest
    /// is to be read back).
    pub fn finish(self) -> Option<(blake3::Hasher, u64)> {
        self.hasher.map(|h| (*h, self.hashed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_out_of_order_hash_as_the_file_in_order() {
        let bytes: Vec<u8> = (0..40u32).map(|i| i as u8).collect();
        let mut order = InOrder::new(blake3::Hasher::new(), 0, 20);
        let hash = |order: &mut InOrder, offset: usize, len: usize| {
            let mut buf = bytes[offset..offset + len].to_vec();
            if let Offer::Hash(mut hasher) = order.offer(offset as u64, &mut buf, len, || vec![0; 10]) {
                hasher.update(&buf[..len]);
                let mut at = (offset + len) as u64;
                while let Ok((h, held, n)) = order.next(hasher, at) {
                    hasher = h;
                    hasher.update(&held[..n]);
                    at += n as u64;
                }
            }
        };
        hash(&mut order, 10, 10);
        hash(&mut order, 30, 10);
        hash(&mut order, 0, 10);
        assert_eq!(order.hashed, 20, "the held range followed");
        hash(&mut order, 20, 10);
        let (hasher, end) = order.finish().unwrap();
        assert_eq!((hasher.finalize(), end), (blake3::hash(&bytes), 40));

        // Past the bound: not held, read back at the end.
        let mut order = InOrder::new(blake3::Hasher::new(), 0, 5);
        hash(&mut order, 10, 10);
        hash(&mut order, 0, 10);
        assert_eq!(order.finish().unwrap().1, 10);
    }
}
