//! A file's chunks on the sending side, read and hashed ahead of the connection: for a file of
//! more than one [`CHUNK`] a helper thread reads whole pieces into a few recycled buffers and feeds
//! BLAKE3 while the session's thread writes the previous ones to the receiver, so reading,
//! hashing and sending overlap instead of taking turns; a file of one chunk or less is read in
//! place.
//!
//! Invariants: the chunks come in file order, each one full ([`PIECE`] bytes from the helper
//! thread, [`CHUNK`] in place) except the last; the hash covers exactly the bytes handed out,
//! in that order; a failure (the file shrank, a read failed) ends the chunks with its reason,
//! and nothing after it is read; the buffers (at most [`DEPTH`] of them) are allocated once per
//! file and reused. Dropping a [`ReadAhead`] stops its thread within [`DEPTH`] chunks.

use std::fs::File;
use std::io::{self, Read};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::{Scope, ScopedJoinHandle};

use crate::protocol::{self, CHUNK};

/// Bytes per chunk record of a file of more than one [`CHUNK`]: a quarter of the largest the
/// protocol allows, so the chunks in flight between the threads stay in the processor's cache.
pub const PIECE: usize = CHUNK / 4;

/// Chunks read ahead at most (each [`PIECE`] bytes and a record prefix).
pub const DEPTH: usize = 4;

/// One step of a file's data.
pub enum Piece {
    /// A chunk record ready to send: the buffer's first `4 + len` bytes (the chunk's length
    /// prefix, then its bytes); give the buffer back with [`ReadAhead::recycle`].
    Chunk(Vec<u8>, usize),
    /// This side gives the file up: why.
    Failed(String),
    /// All the bytes were handed out.
    End,
}

/// The chunks of one file from `start` to its announced size, with their hash.
pub enum ReadAhead<'scope> {
    /// Read on the caller's thread (a file of at most one chunk).
    InPlace(Box<InPlace<'scope>>),
    /// Read and hashed on a helper thread.
    Threaded(Threaded<'scope>),
}

/// The state of [`ReadAhead::InPlace`].
pub struct InPlace<'f> {
    file: &'f File,
    reader: Chunker,
    buf: Option<Vec<u8>>,
}

/// The state of [`ReadAhead::Threaded`].
pub struct Threaded<'scope> {
    full: Receiver<Piece>,
    free: SyncSender<Vec<u8>>,
    thread: ScopedJoinHandle<'scope, blake3::Hasher>,
}

/// Where a file's reading stands: the next offset, the end, the hash so far.
struct Chunker {
    done: u64,
    size: u64,
    hasher: blake3::Hasher,
    ended: bool,
}

impl Chunker {
    /// Read the next chunk into `buf` (after its 4-byte prefix, which is filled in) and hash
    /// it: its length, or `None` at the end.
    fn next(&mut self, file: &File, buf: &mut [u8]) -> Result<Option<usize>, String> {
        if self.ended || self.done >= self.size {
            self.ended = true;
            return Ok(None);
        }
        let want = usize::try_from(self.size - self.done).unwrap_or(usize::MAX).min(buf.len() - 4);
        let mut got = 0;
        while got < want {
            match (&*file).read(&mut buf[4 + got..4 + want]) {
                Ok(0) => {
                    self.ended = true;
                    let at = self.done + got as u64;
                    return Err(format!("the file shrank while being sent ({at} of {} bytes)", self.size));
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.ended = true;
                    let at = self.done + got as u64;
                    return Err(format!("reading the file failed after {at} bytes: {e}"));
                }
            }
        }
        self.hasher.update(&buf[4..4 + want]);
        buf[..4].copy_from_slice(&protocol::chunk_prefix(want));
        self.done += want as u64;
        Ok(Some(want))
    }

    /// [`Chunker::next`] as a [`Piece`] holding `buf`.
    fn piece(&mut self, file: &File, mut buf: Vec<u8>) -> Piece {
        match self.next(file, &mut buf) {
            Ok(Some(n)) => Piece::Chunk(buf, n),
            Ok(None) => Piece::End,
            Err(reason) => Piece::Failed(reason),
        }
    }
}

/// A buffer for chunk records of at most `len` bytes.
fn buffer(len: usize) -> Vec<u8> {
    vec![0u8; 4 + len]
}

impl<'scope> ReadAhead<'scope> {
    /// Start reading `file` (positioned at `start`) up to `size` bytes, continuing `hasher`
    /// (which covers the bytes before `start`); a helper thread in `scope` does it when more
    /// than one chunk is due.
    pub fn start<'env>(
        scope: &'scope Scope<'scope, 'env>,
        file: &'scope File,
        start: u64,
        size: u64,
        hasher: blake3::Hasher,
    ) -> ReadAhead<'scope> {
        let left = size.saturating_sub(start);
        let in_place = |hasher| {
            let reader = Chunker { done: start, size, hasher, ended: false };
            let len = usize::try_from(left).unwrap_or(CHUNK).min(CHUNK);
            ReadAhead::InPlace(Box::new(InPlace { file, reader, buf: Some(buffer(len)) }))
        };
        if left <= CHUNK as u64 {
            return in_place(hasher);
        }
        let (full_tx, full) = sync_channel::<Piece>(DEPTH);
        let (free, free_rx) = sync_channel::<Vec<u8>>(DEPTH);
        for _ in 0..DEPTH {
            // Cannot fail: the channel has room for all of them and its receiver is here.
            let _ = free.send(buffer(PIECE));
        }
        let mut reader = Chunker { done: start, size, hasher: hasher.clone(), ended: false };
        let spawned = std::thread::Builder::new().name("udt-read".into()).spawn_scoped(scope, move || {
            while let Ok(buf) = free_rx.recv() {
                let piece = reader.piece(file, buf);
                let last = !matches!(piece, Piece::Chunk(..));
                if full_tx.send(piece).is_err() || last {
                    break;
                }
            }
            reader.hasher
        });
        match spawned {
            Ok(thread) => ReadAhead::Threaded(Threaded { full, free, thread }),
            Err(e) => {
                tracing::debug!("cannot start a reading thread ({e}); reading in place");
                in_place(hasher)
            }
        }
    }

    /// The next step of the file's data (after [`Piece::End`] or [`Piece::Failed`]: `End`).
    pub fn next(&mut self) -> Piece {
        match self {
            ReadAhead::InPlace(p) => {
                let Some(mut buf) = p.buf.take() else {
                    return Piece::Failed("internal error: a chunk buffer was not given back".into());
                };
                match p.reader.next(p.file, &mut buf) {
                    Ok(Some(n)) => Piece::Chunk(buf, n),
                    other => {
                        p.buf = Some(buf);
                        match other {
                            Err(reason) => Piece::Failed(reason),
                            Ok(_) => Piece::End,
                        }
                    }
                }
            }
            ReadAhead::Threaded(t) => t.full.recv().unwrap_or(Piece::End),
        }
    }

    /// Give back the buffer of a [`Piece::Chunk`] once its bytes went.
    pub fn recycle(&mut self, buf: Vec<u8>) {
        match self {
            ReadAhead::InPlace(p) => p.buf = Some(buf),
            // The thread may have ended (the last chunk was read): the buffer is then dropped.
            ReadAhead::Threaded(t) => drop(t.free.try_send(buf)),
        }
    }

    /// The hash of the bytes before `start` and of every chunk handed out.
    pub fn finish(self) -> blake3::Hasher {
        match self {
            ReadAhead::InPlace(p) => p.reader.hasher,
            ReadAhead::Threaded(Threaded { full, free, thread }) => {
                drop((full, free));
                thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Seek, SeekFrom, Write};

    use super::*;

    /// Deterministic bytes.
    fn data(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 4099) as u8).collect()
    }

    fn file_of(bytes: &[u8]) -> File {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        file.rewind().unwrap();
        file
    }

    /// Every piece until the end: the chunk records' payloads (checked against their prefix),
    /// the failure if any, and the final hash.
    fn drain(
        file: &File,
        start: u64,
        size: u64,
        hasher: blake3::Hasher,
    ) -> (Vec<Vec<u8>>, Option<String>, blake3::Hash) {
        std::thread::scope(|scope| {
            let mut chunks = ReadAhead::start(scope, file, start, size, hasher);
            let mut got = Vec::new();
            let failure = loop {
                match chunks.next() {
                    Piece::Chunk(buf, n) => {
                        assert_eq!(buf[..4], protocol::chunk_prefix(n));
                        got.push(buf[4..4 + n].to_vec());
                        chunks.recycle(buf);
                    }
                    Piece::Failed(reason) => break Some(reason),
                    Piece::End => break None,
                }
            };
            assert!(matches!(chunks.next(), Piece::End), "nothing after the end");
            (got, failure, chunks.finish().finalize())
        })
    }

    #[test]
    fn a_file_of_many_chunks_comes_whole_in_full_chunks_with_its_one_shot_hash() {
        let bytes = data(3 * CHUNK + 12_345);
        let file = file_of(&bytes);
        let (chunks, failure, hash) = drain(&file, 0, bytes.len() as u64, blake3::Hasher::new());
        assert_eq!(failure, None);
        let mut sizes = vec![PIECE; 3 * CHUNK / PIECE];
        sizes.push(12_345);
        assert_eq!(chunks.iter().map(Vec::len).collect::<Vec<_>>(), sizes);
        assert!(chunks.concat() == bytes);
        assert_eq!(hash, blake3::hash(&bytes));
    }

    #[test]
    fn a_resumed_file_hashes_as_a_whole_from_the_proof_on() {
        let bytes = data(2 * CHUNK + 99);
        let offset = CHUNK / 3;
        let mut file = file_of(&bytes);
        file.seek(SeekFrom::Start(offset as u64)).unwrap();
        let mut prefix = blake3::Hasher::new();
        prefix.update(&bytes[..offset]);
        let (chunks, failure, hash) = drain(&file, offset as u64, bytes.len() as u64, prefix);
        assert_eq!(failure, None);
        assert!(chunks.concat() == bytes[offset..]);
        assert_eq!(hash, blake3::hash(&bytes));
    }

    #[test]
    fn a_small_file_is_read_in_place() {
        let bytes = data(5000);
        let file = file_of(&bytes);
        std::thread::scope(|scope| {
            let chunks = ReadAhead::start(scope, &file, 0, bytes.len() as u64, blake3::Hasher::new());
            assert!(matches!(chunks, ReadAhead::InPlace(_)));
        });
        let (chunks, failure, hash) = drain(&file, 0, bytes.len() as u64, blake3::Hasher::new());
        assert_eq!((chunks.concat(), failure, hash), (bytes.clone(), None, blake3::hash(&bytes)));
    }

    #[test]
    fn a_file_shorter_than_announced_ends_with_the_reason_after_its_full_chunks() {
        let bytes = data(2 * CHUNK + 10);
        let file = file_of(&bytes);
        let size = 4 * CHUNK as u64;
        let (chunks, failure, _) = drain(&file, 0, size, blake3::Hasher::new());
        assert_eq!(chunks.len(), 2 * CHUNK / PIECE, "the full chunks");
        let reason = failure.unwrap();
        assert!(
            reason.contains(&format!("the file shrank while being sent ({} of {size} bytes)", bytes.len())),
            "{reason}"
        );
    }

    #[test]
    fn stopping_early_ends_the_reading_thread() {
        let bytes = data(8 * CHUNK);
        let file = file_of(&bytes);
        std::thread::scope(|scope| {
            let mut chunks = ReadAhead::start(scope, &file, 0, bytes.len() as u64, blake3::Hasher::new());
            assert!(matches!(chunks.next(), Piece::Chunk(..)));
            drop(chunks);
        });
    }
}
