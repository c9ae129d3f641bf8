//! Where received files land: every file-system operation of a receiver, done relative to
//! directory descriptors it holds, never through a path string that something else on the host
//! could redirect between a check and its use.
//!
//! Invariants:
//! - The output directory is opened once ([`Root`]); everything below it is reached from that descriptor one
//!   component at a time with `openat(O_DIRECTORY | O_NOFOLLOW)` ([`walk()`]), so no symbolic
//!   link below the output directory is ever followed, whoever planted it and whenever.
//! - What is looked up at one moment and used at a later one (a directory between a file's
//!   announcement and its data, a temporary file, a directory whose metadata is applied when
//!   the session ends) is found again the same way and must have the same device and inode
//!   number ([`walk::Id`]), or it is not used.
//! - Files are created exclusively and private (`O_CREAT | O_EXCL | O_NOFOLLOW`, 0600),
//!   directories private (`mkdirat`, 0700); their final permissions ([`mode`]) are applied
//!   through descriptors (`fchmod`, `futimens`), and only to what this session created.
//! - A file left by an earlier transfer is reused only if it is this user's own, private, with
//!   one link ([`partial`]); anything else is set aside, untouched.
//! - Messages meant for the sender name paths relative to the output directory, never the absolute path.

mod commit;
mod dirs;
mod expiry;
pub mod mode;
mod partial;
mod prune;
mod root;
mod sweep;
mod walk;

pub use commit::commit;
pub use dirs::SessionDirs;
pub use expiry::Ttl;
pub use partial::{create_temp, inspect, temp_name, Left, Temp};
pub use prune::{prune, Keep};
pub use root::Root;
pub use sweep::{sweep, Swept};
pub use walk::{entry_meta, open_existing, walk, Id, Spot};
