//! [`RxDatagram`]: one received datagram in a buffer of its own, so the receive buffer can keep
//! the buffer instead of copying the payload out of it.
//!
//! A driver receives straight into a datagram's storage (e.g. one iovec per datagram, so the
//! kernel's copy is the only one) and hands it to
//! [`Connection::handle_datagram_buf`](crate::connection::Connection::handle_datagram_buf).
//! When the datagram is a data packet that gets stored, the receive buffer *swaps* it with the
//! buffer of the slot it fills (a slot whose packet was read long ago, or one never used, which
//! holds an empty buffer): the bytes are not copied, nothing is allocated, and the driver gets
//! back a buffer to receive into next.
//!
//! Invariant: `len <= storage.len()`; the storage is fully initialised (zeroed when created), so
//! a driver may hand all of it to the kernel.

/// A received datagram and the buffer holding it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RxDatagram {
    storage: Vec<u8>,
    len: usize,
}

impl std::fmt::Debug for RxDatagram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RxDatagram").field("len", &self.len).field("capacity", &self.capacity()).finish()
    }
}

impl RxDatagram {
    /// An empty datagram with room for `capacity` bytes (allocates, zeroed).
    pub fn with_capacity(capacity: usize) -> Self {
        RxDatagram { storage: vec![0; capacity], len: 0 }
    }

    /// An empty datagram without storage (does not allocate).
    pub const fn empty() -> Self {
        RxDatagram { storage: Vec::new(), len: 0 }
    }

    /// A datagram holding a copy of `bytes` (allocates; for tests and simulators).
    pub fn from_bytes(bytes: &[u8]) -> Self {
        RxDatagram { storage: bytes.to_vec(), len: bytes.len() }
    }

    /// Largest datagram the storage holds.
    pub fn capacity(&self) -> usize {
        self.storage.len()
    }

    /// The whole storage, beyond the datagram too.
    pub fn storage(&self) -> &[u8] {
        &self.storage
    }

    /// The whole storage, to receive into; follow with [`set_len`](Self::set_len).
    pub fn storage_mut(&mut self) -> &mut [u8] {
        &mut self.storage
    }

    /// The datagram is the first `len` bytes of the storage (clamped to the capacity).
    pub fn set_len(&mut self, len: usize) {
        self.len = len.min(self.storage.len());
    }

    /// Length of the datagram.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No datagram is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The datagram's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.storage[..self.len]
    }

    /// Write `bytes` at `at`, growing the storage to at least `min_capacity` (and to fit) if it
    /// is smaller; the datagram then ends after them.
    pub(crate) fn write_at(&mut self, at: usize, bytes: &[u8], min_capacity: usize) {
        let end = at + bytes.len();
        let want = min_capacity.max(end);
        if self.storage.len() < want {
            self.storage = vec![0; want];
        }
        self.storage[at..end].copy_from_slice(bytes);
        self.len = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_clamped_to_the_storage() {
        let mut d = RxDatagram::with_capacity(8);
        assert!(d.is_empty());
        assert_eq!(d.capacity(), 8);
        d.storage_mut()[..3].copy_from_slice(b"abc");
        d.set_len(3);
        assert_eq!(d.bytes(), b"abc");
        d.set_len(100);
        assert_eq!(d.len(), 8);
        assert_eq!(RxDatagram::empty().capacity(), 0);
        assert_eq!(RxDatagram::from_bytes(b"xy").bytes(), b"xy");
    }

    #[test]
    fn write_at_grows_only_when_needed() {
        let mut d = RxDatagram::empty();
        d.write_at(2, b"hi", 10);
        assert_eq!(d.capacity(), 10);
        assert_eq!(&d.bytes()[2..], b"hi");
        d.write_at(0, b"z", 4);
        assert_eq!(d.capacity(), 10);
        assert_eq!(d.bytes(), b"z");
        d.write_at(9, b"long", 0);
        assert_eq!(d.capacity(), 13);
        assert_eq!(&d.bytes()[9..], b"long");
    }
}
