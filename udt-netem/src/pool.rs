//! A slab of fixed-size packet buffers, addressed by slot number, so that the forwarding hot
//! path allocates nothing: a packet is read into a free slot, waits there until its release
//! and the slot is then returned.
//!
//! Invariants: a slot is either free (on the free list) or held by exactly one caller; the
//! slab grows in chunks of [`CHUNK`] slots (never moving existing ones) up to `max_slots`
//! rounded up to a whole chunk.

/// Slots added at a time when the free list runs dry.
pub const CHUNK: usize = 256;

/// A packet buffer's slot number.
pub type Slot = u32;

/// The slab.
#[derive(Debug)]
pub struct Pool {
    chunks: Vec<Box<[u8]>>,
    free: Vec<Slot>,
    slot_size: usize,
    max_slots: usize,
}

impl Pool {
    /// A pool of `slot_size`-byte buffers, holding at most `max_slots` of them, with one chunk
    /// allocated up front.
    pub fn new(slot_size: usize, max_slots: usize) -> Self {
        let mut pool = Self { chunks: Vec::new(), free: Vec::new(), slot_size, max_slots: max_slots.max(1) };
        pool.grow();
        pool
    }

    fn grow(&mut self) -> bool {
        let have = self.chunks.len() * CHUNK;
        if have >= self.max_slots {
            return false;
        }
        let Ok(first) = Slot::try_from(have) else { return false };
        self.chunks.push(vec![0u8; CHUNK * self.slot_size].into_boxed_slice());
        self.free.reserve(CHUNK);
        self.free.extend((first..first + CHUNK as Slot).rev());
        true
    }

    /// Takes a free slot, growing the slab if needed; `None` when the limit is reached.
    pub fn alloc(&mut self) -> Option<Slot> {
        if self.free.is_empty() && !self.grow() {
            return None;
        }
        self.free.pop()
    }

    /// Returns a slot taken with [`Pool::alloc`].
    pub fn release(&mut self, slot: Slot) {
        self.free.push(slot);
    }

    /// The whole buffer of `slot`.
    pub fn buf_mut(&mut self, slot: Slot) -> &mut [u8] {
        let (chunk, offset) = self.locate(slot);
        &mut self.chunks[chunk][offset..offset + self.slot_size]
    }

    /// The buffer of `slot`.
    pub fn buf(&self, slot: Slot) -> &[u8] {
        let (chunk, offset) = self.locate(slot);
        &self.chunks[chunk][offset..offset + self.slot_size]
    }

    /// Copies the first `len` bytes of slot `from` to slot `to`.
    pub fn copy(&mut self, from: Slot, to: Slot, len: usize) {
        let (fc, fo) = self.locate(from);
        let (tc, to_off) = self.locate(to);
        if fc == tc {
            self.chunks[fc].copy_within(fo..fo + len, to_off);
        } else {
            let (src, dst) = if fc < tc {
                let (a, b) = self.chunks.split_at_mut(tc);
                (&a[fc], &mut b[0])
            } else {
                let (a, b) = self.chunks.split_at_mut(fc);
                (&b[0], &mut a[tc])
            };
            dst[to_off..to_off + len].copy_from_slice(&src[fo..fo + len]);
        }
    }

    fn locate(&self, slot: Slot) -> (usize, usize) {
        let slot = slot as usize;
        (slot / CHUNK, (slot % CHUNK) * self.slot_size)
    }

    /// Slots allocated so far (free or held).
    pub fn capacity(&self) -> usize {
        self.chunks.len() * CHUNK
    }

    /// Size of each buffer.
    pub fn slot_size(&self) -> usize {
        self.slot_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_in_chunks_up_to_the_limit_and_reuses_slots() {
        let mut pool = Pool::new(64, 600);
        assert_eq!(pool.capacity(), CHUNK);
        let held: Vec<Slot> = (0..600).map(|_| pool.alloc().unwrap()).collect();
        assert_eq!(pool.capacity(), 3 * CHUNK);
        let mut sorted = held.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 600, "no slot handed out twice");
        // 600 rounds up to three chunks (768 slots): the limit is checked per chunk.
        let extra: Vec<Slot> = std::iter::from_fn(|| pool.alloc()).collect();
        assert_eq!(extra.len(), 3 * CHUNK - 600);
        assert_eq!(pool.alloc(), None);
        pool.release(held[7]);
        assert_eq!(pool.alloc(), Some(held[7]));
    }

    #[test]
    fn buffers_are_separate_and_copy_works_across_chunks() {
        let mut pool = Pool::new(16, 1024);
        let a = pool.alloc().unwrap();
        let slots: Vec<Slot> = (0..300).map(|_| pool.alloc().unwrap()).collect();
        let b = *slots.last().unwrap();
        assert_ne!(a as usize / CHUNK, b as usize / CHUNK);
        pool.buf_mut(a).copy_from_slice(&[0xa5; 16]);
        pool.buf_mut(b).fill(0);
        pool.copy(a, b, 10);
        assert_eq!(&pool.buf(b)[..11], &[0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0]);
        pool.copy(b, slots[0], 16);
        assert_eq!(pool.buf(slots[0])[9], 0xa5);
        assert_eq!(pool.slot_size(), 16);
    }
}
