//! The consent rule for hidden names: a transfer's top-level entries (the first component of
//! each path) must not begin with a dot unless the receiver allows it (`--allow-dotfiles`).
//!
//! Why the top level only: that is where a receiver started in its home directory (`udt recv --out`
//! defaults to `.`) keeps the files that configure its programs (`.ssh/authorized_keys`,
//! `.bashrc`, `.profile`, `.config/...`, `.gitconfig`), so a name there is a request to change
//! how the receiving host behaves, not a file delivery. Inside a tree (`proj/.gitignore`,
//! `photos/.thumbnails`) a dot name is data of the tree the receiver accepted by its top name.
//!
//! Invariant: the rule is applied to directory entries and file entries alike, before
//! anything is created for them.

/// Refuse a path whose first component is hidden, unless `allow_dotfiles`; `Err` is the
/// reason for the sender, saying what either end can do.
pub fn check(parts: &[&str], allow_dotfiles: bool) -> Result<(), String> {
    match parts.first() {
        Some(top) if top.starts_with('.') && !allow_dotfiles => Err(format!(
            "\"{}\" is a hidden name at the top of the transfer, which the receiver refuses \
             (such names configure programs in a home directory): send it under another name \
             (udt send --as NAME), or the receiver must allow it (udt recv --allow-dotfiles)",
            crate::protocol::display_name(top)
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_top_level_names_need_consent() {
        for refused in [&[".ssh", "authorized_keys"][..], &[".bashrc"], &[".config", "a", "b"]] {
            let e = check(refused, false).unwrap_err();
            assert!(e.contains("--allow-dotfiles") && e.contains("--as NAME"), "{e}");
            assert_eq!(check(refused, true), Ok(()));
        }
        for fine in [&["proj", ".gitignore"][..], &["a.txt"], &["x", ".hidden", ".dot"]] {
            assert_eq!(check(fine, false), Ok(()), "{fine:?}");
        }
    }
}
