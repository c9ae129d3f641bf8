//! The operands of `udt send` and `udt recv` that name another host, as scp reads them:
//! `[USER@]HOST:PATH` when a colon comes before any slash (`./a:b` and `/x/a:b` are local
//! paths, and so is `:b`), `[USER@][V6ADDR]:PATH` for IPv6 literals; and the quoting of the
//! far command's words for the far host's shell.
//!
//! Invariants: a host never begins with `-` (it would be an option to `ssh`); every word of the
//! far command is quoted so the far shell passes it as it is, except a leading `~/` of a path,
//! which the far shell expands to the far user's home as scp does.

/// A `[USER@]HOST:PATH` operand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemotePath {
    /// What `ssh` is given as the destination: `USER@HOST`, `HOST`, or the IPv6 literal
    /// without brackets (with its user, if any).
    pub destination: String,
    /// The host alone (no user, no brackets): where the UDT connection goes.
    pub host: String,
    /// The path on that host (empty: the far user's home directory).
    pub path: String,
}

/// Read `operand` as a remote path, or `None` for a local one (see the module's doc).
pub fn parse_remote(operand: &str) -> Option<RemotePath> {
    let (user, rest) = match operand.split_once('@') {
        // An `@` after a slash or a colon belongs to a local path or to the remote path.
        Some((user, rest)) if !user.contains(['/', ':']) && !user.is_empty() => (Some(user), rest),
        _ => (None, operand),
    };
    let (host, path) = if let Some(v6) = rest.strip_prefix('[') {
        let (addr, after) = v6.split_once(']')?;
        (addr, after.strip_prefix(':')?)
    } else {
        let colon = rest.find(':')?;
        if rest[..colon].contains('/') {
            return None;
        }
        (&rest[..colon], &rest[colon + 1..])
    };
    if host.is_empty() || host.starts_with('-') || host.contains(char::is_whitespace) {
        return None;
    }
    let destination = match user {
        Some(user) => format!("{user}@{host}"),
        None => host.to_string(),
    };
    Some(RemotePath { destination, host: host.to_string(), path: path.to_string() })
}

/// What the last operand of `udt send` names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SendTarget {
    /// `HOST:PORT`: a `udt recv` already listening there.
    Udt(String),
    /// `[USER@]HOST:[DIR]`: a `udt recv` started there through ssh.
    Ssh(RemotePath),
}

/// Parse the target of `udt send`: `HOST:PORT` (no user, the part after the colon all digits)
/// is a listening `udt recv`; any other remote path is a directory on a host reached by ssh
/// (`host:`, `host:dir`, `user@host:9000`; a directory named by digits alone is `host:./9000`).
pub fn parse_send_target(s: &str) -> Result<SendTarget, String> {
    let Some(remote) = parse_remote(s) else {
        return Err(format!(
            "`{s}` is neither HOST:PORT (a listening `udt recv`) nor [USER@]HOST:[DIR] (a host reached \
             by ssh)"
        ));
    };
    let is_port = !remote.path.is_empty() && remote.path.bytes().all(|b| b.is_ascii_digit());
    if is_port && !s.contains('@') {
        return crate::net::parse_target(s).map(SendTarget::Udt);
    }
    Ok(SendTarget::Ssh(remote))
}

/// `word` quoted for a POSIX shell, as a word it passes on unchanged.
pub fn quote(word: &str) -> String {
    let plain = |b: u8| b.is_ascii_alphanumeric() || b"_-./=:,+@%".contains(&b);
    if !word.is_empty() && word.bytes().all(plain) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// A far path as a word for the far shell: quoted, a leading `~/` (or `~` alone) left for the
/// shell to expand, a leading `-` prefixed with `./` so no program reads it as an option, and
/// the empty path (the home directory, where ssh starts) as `.`.
pub fn quote_path(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    if path == "~" {
        return "~".into();
    }
    if let Some(rest) = path.strip_prefix("~/") {
        return if rest.is_empty() { "~/".into() } else { format!("~/{}", quote(rest)) };
    }
    if path.starts_with('-') {
        return quote(&format!("./{path}"));
    }
    quote(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(d: &str, h: &str, p: &str) -> Option<RemotePath> {
        Some(RemotePath { destination: d.into(), host: h.into(), path: p.into() })
    }

    #[test]
    fn a_colon_before_any_slash_names_a_host() {
        assert_eq!(parse_remote("host:dir/x"), remote("host", "host", "dir/x"));
        assert_eq!(parse_remote("me@host:"), remote("me@host", "host", ""));
        assert_eq!(parse_remote("host:a:b"), remote("host", "host", "a:b"));
        assert_eq!(parse_remote("[::1]:in"), remote("::1", "::1", "in"));
        assert_eq!(parse_remote("me@[fe80::1]:~/x"), remote("me@fe80::1", "fe80::1", "~/x"));
        assert_eq!(parse_remote("host:/srv/a@b"), remote("host", "host", "/srv/a@b"));
        for local in ["./a:b", "/x/a:b", "a/b:c", ":b", "plain", "dir/", "[::1]", "-oProxy=x:y", "a b:c"] {
            assert_eq!(parse_remote(local), None, "{local}");
        }
    }

    #[test]
    fn send_targets_are_ports_or_directories() {
        assert_eq!(parse_send_target("host:9000"), Ok(SendTarget::Udt("host:9000".into())));
        assert_eq!(parse_send_target("[::1]:9000"), Ok(SendTarget::Udt("[::1]:9000".into())));
        assert_eq!(parse_send_target("host:"), Ok(SendTarget::Ssh(remote("host", "host", "").unwrap())));
        assert_eq!(
            parse_send_target("me@host:9000"),
            Ok(SendTarget::Ssh(remote("me@host", "host", "9000").unwrap()))
        );
        assert_eq!(
            parse_send_target("host:./9000"),
            Ok(SendTarget::Ssh(remote("host", "host", "./9000").unwrap()))
        );
        assert!(parse_send_target("host:99999").is_err());
        assert!(parse_send_target("host").is_err());
        assert!(parse_send_target("./x:1").is_err());
    }

    #[test]
    fn far_words_survive_the_shell() {
        assert_eq!(quote("plain/path-1.txt"), "plain/path-1.txt");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("$(rm -rf ~)"), "'$(rm -rf ~)'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote_path(""), ".");
        assert_eq!(quote_path("~/my dir"), "~/'my dir'");
        assert_eq!(quote_path("~"), "~");
        assert_eq!(quote_path("-rf"), "./-rf");
        assert_eq!(quote_path("/abs/x y"), "'/abs/x y'");
    }
}
