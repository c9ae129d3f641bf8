//! A file's bytes on the receiving side, hashed and written off the connection's thread: for a
//! file of more than one [`CHUNK`] a helper thread feeds BLAKE3 and writes each filled buffer
//! while the session's thread reads the next one from the connection, so receiving, hashing
//! and writing overlap instead of taking turns; a file of one chunk or less is hashed and
//! written in place.
//!
//! Invariants: buffers are hashed and written in the order they are stored, each whole; the
//! hash covers every byte stored, written or not; after the first write error nothing more is
//! written (the bytes are still hashed, so the caller stays in step with the sender) and that
//! error is the one reported; the buffers (at most [`DEPTH`]) are allocated once per file and
//! reused; [`Store::finish`] returns only once every stored byte was written.

use std::io::{self, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::{Scope, ScopedJoinHandle};

use crate::protocol::CHUNK;

/// Bytes per buffer of a file of more than one [`CHUNK`]: a quarter of a chunk, so the
/// buffers in flight between the threads stay in the processor's cache.
pub const PIECE: usize = CHUNK / 4;

/// Buffers in flight at most (each [`PIECE`] bytes).
pub const DEPTH: usize = 4;

/// What a [`Store`] gives at the end: the hash, and the first write error if any.
pub type Stored = (blake3::Hasher, Option<io::Error>);

/// Where a file's bytes go: hashed, then written to `W`.
pub enum Store<'scope, W> {
    /// On the caller's thread (a file of at most one chunk).
    InPlace(Box<InPlace<W>>),
    /// On a helper thread.
    Threaded(Threaded<'scope>),
}

/// The state of [`Store::InPlace`].
pub struct InPlace<W> {
    sink: Sink<W>,
    buf: Option<Vec<u8>>,
}

/// The state of [`Store::Threaded`].
pub struct Threaded<'scope> {
    full: SyncSender<(Vec<u8>, usize)>,
    free: Receiver<Vec<u8>>,
    thread: ScopedJoinHandle<'scope, Stored>,
}

/// The hasher and the writer, with the first write error.
struct Sink<W> {
    out: W,
    hasher: blake3::Hasher,
    error: Option<io::Error>,
}

impl<W: Write> Sink<W> {
    fn take(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        if self.error.is_none() {
            self.error = self.out.write_all(bytes).err();
        }
    }

    fn end(mut self) -> Stored {
        if self.error.is_none() {
            self.error = self.out.flush().err();
        }
        (self.hasher, self.error)
    }
}

/// A buffer of `len` bytes (at least one).
fn buffer(len: usize) -> Vec<u8> {
    vec![0u8; len.max(1)]
}

impl<'scope, W: Write + Send + Clone + 'scope> Store<'scope, W> {
    /// Store the `left` bytes still to come of a file into `out`, continuing `hasher` (which
    /// covers the bytes before them); a helper thread in `scope` does it when more than one
    /// chunk is due (`out` is cloned for it: a handle such as `&File`).
    pub fn start<'env>(
        scope: &'scope Scope<'scope, 'env>,
        out: W,
        left: u64,
        hasher: blake3::Hasher,
    ) -> Self {
        let len = usize::try_from(left).unwrap_or(CHUNK).min(CHUNK);
        let in_place = |sink| Store::InPlace(Box::new(InPlace { sink, buf: Some(buffer(len)) }));
        if left <= CHUNK as u64 {
            return in_place(Sink { out, hasher, error: None });
        }
        let (full, full_rx) = sync_channel::<(Vec<u8>, usize)>(DEPTH);
        let (free_tx, free) = sync_channel::<Vec<u8>>(DEPTH);
        for _ in 0..DEPTH {
            // Cannot fail: the channel has room for all of them and its receiver is here.
            let _ = free_tx.send(buffer(PIECE));
        }
        let mut sink = Sink { out: out.clone(), hasher: hasher.clone(), error: None };
        let spawned = std::thread::Builder::new().name("udt-write".into()).spawn_scoped(scope, move || {
            while let Ok((buf, n)) = full_rx.recv() {
                sink.take(&buf[..n]);
                // Never blocks: the channel holds all the buffers there are.
                let _ = free_tx.send(buf);
            }
            sink.end()
        });
        match spawned {
            Ok(thread) => Store::Threaded(Threaded { full, free, thread }),
            Err(e) => {
                tracing::debug!("cannot start a writing thread ({e}); writing in place");
                in_place(Sink { out, hasher, error: None })
            }
        }
    }
}

impl<W: Write> Store<'_, W> {
    /// An empty buffer to fill (waits for one the helper thread is done with).
    pub fn buffer(&mut self) -> Vec<u8> {
        match self {
            Store::InPlace(p) => p.buf.take().unwrap_or_else(|| buffer(CHUNK)),
            Store::Threaded(t) => t.free.recv().unwrap_or_else(|_| buffer(PIECE)),
        }
    }

    /// Hash and write the first `n` bytes of `buf` (from [`Store::buffer`]) after those
    /// stored before.
    pub fn store(&mut self, buf: Vec<u8>, n: usize) {
        match self {
            Store::InPlace(p) => {
                p.sink.take(&buf[..n]);
                p.buf = Some(buf);
            }
            // A failure means the thread ended early (it panicked): `finish` says so.
            Store::Threaded(t) => drop(t.full.send((buf, n))),
        }
    }

    /// Wait until everything stored is written; the hash and the first write error.
    pub fn finish(self) -> Stored {
        match self {
            Store::InPlace(p) => p.sink.end(),
            Store::Threaded(Threaded { full, free, thread }) => {
                drop((full, free));
                thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::io::{Read, Seek};
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Deterministic bytes.
    fn data(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 13 + i / 4093) as u8).collect()
    }

    /// Store `bytes` into `out` in buffers of the given sizes (cycled); the hash and error.
    fn store_all<W: Write + Send + Clone>(out: W, bytes: &[u8], sizes: &[usize]) -> Stored {
        std::thread::scope(|scope| {
            let mut store = Store::start(scope, out, bytes.len() as u64, blake3::Hasher::new());
            let mut at = 0;
            for &size in sizes.iter().cycle() {
                if at == bytes.len() {
                    break;
                }
                let mut buf = store.buffer();
                let n = size.min(buf.len()).min(bytes.len() - at);
                buf[..n].copy_from_slice(&bytes[at..at + n]);
                store.store(buf, n);
                at += n;
            }
            store.finish()
        })
    }

    #[test]
    fn a_large_file_is_written_whole_and_hashed_as_blake3_in_one_go() {
        let bytes = data(5 * CHUNK + 4321);
        let mut file = tempfile::tempfile().unwrap();
        let (hasher, error) = store_all(&file, &bytes, &[CHUNK, 17, CHUNK - 17, 300_000]);
        assert!(error.is_none(), "{error:?}");
        assert_eq!(hasher.finalize(), blake3::hash(&bytes));
        let mut written = Vec::new();
        file.rewind().unwrap();
        file.read_to_end(&mut written).unwrap();
        assert!(written == bytes, "the bytes, in order");
    }

    #[test]
    fn a_small_file_is_stored_in_place() {
        let bytes = data(1000);
        let file = tempfile::tempfile().unwrap();
        std::thread::scope(|scope| {
            let store = Store::start(scope, &file, bytes.len() as u64, blake3::Hasher::new());
            assert!(matches!(store, Store::InPlace(_)));
        });
        let (hasher, error) = store_all(&file, &bytes, &[CHUNK]);
        assert!(error.is_none());
        assert_eq!(hasher.finalize(), blake3::hash(&bytes));
        assert_eq!(file.metadata().unwrap().len(), 1000);
    }

    /// A disk that fills after `room` bytes.
    #[derive(Clone)]
    struct Full {
        written: Arc<Mutex<usize>>,
        room: usize,
    }

    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let mut written = self.written.lock().unwrap();
            let n = buf.len().min(self.room - *written);
            if n == 0 {
                return Err(io::Error::other("no space left"));
            }
            *written += n;
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_write_error_stops_the_writing_but_not_the_hashing() {
        let bytes = data(4 * CHUNK);
        let written = Arc::new(Mutex::new(0));
        let out = Full { written: Arc::clone(&written), room: CHUNK + 5 };
        let (hasher, error) = store_all(out, &bytes, &[CHUNK]);
        assert_eq!(error.unwrap().to_string(), "no space left");
        assert_eq!(*written.lock().unwrap(), CHUNK + 5, "nothing written after the error");
        assert_eq!(hasher.finalize(), blake3::hash(&bytes), "every byte hashed");
    }

    #[test]
    fn finishing_waits_for_every_stored_byte() {
        let bytes = data(3 * CHUNK);
        let file: File = tempfile::tempfile().unwrap();
        let (_, error) = store_all(&file, &bytes, &[CHUNK]);
        assert!(error.is_none());
        assert_eq!(file.metadata().unwrap().len(), bytes.len() as u64);
    }
}
