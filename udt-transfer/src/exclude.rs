//! `--exclude PATTERN`, as rsync reads it: a pattern without a slash matches an entry's name at
//! any depth (`*.o`, `.git`), one with a slash the end of its path (`sub/*.tmp`), one that
//! begins with a slash the path from the transfer's top (`/tree/build`); a trailing slash
//! matches directories only. `*` matches any run of characters but `/`, `?` one character but
//! `/`. An excluded directory is left out with everything under it.
//!
//! Invariant: matching never panics and takes time linear in the pattern times the path.

/// The patterns entries are left out by.
#[derive(Clone, Debug, Default)]
pub struct Exclude {
    patterns: Vec<Pattern>,
}

#[derive(Clone, Debug)]
struct Pattern {
    glob: Vec<char>,
    anchored: bool,
    has_slash: bool,
    dirs_only: bool,
}

impl Exclude {
    /// Exclude what any of `patterns` matches (empty patterns are ignored).
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Exclude {
        let patterns = patterns
            .iter()
            .filter_map(|p| {
                let p = p.as_ref();
                let dirs_only = p.ends_with('/');
                let anchored = p.starts_with('/');
                let core = p.trim_end_matches('/').trim_start_matches('/');
                (!core.is_empty()).then(|| Pattern {
                    glob: core.chars().collect(),
                    anchored,
                    has_slash: core.contains('/'),
                    dirs_only,
                })
            })
            .collect();
        Exclude { patterns }
    }

    /// Whether the entry sent as `path` (`/`-separated; `is_dir` for a directory) is left out.
    pub fn matches(&self, path: &str, is_dir: bool) -> bool {
        self.patterns.iter().any(|p| {
            if p.dirs_only && !is_dir {
                return false;
            }
            let path: Vec<char> = path.chars().collect();
            if p.anchored {
                return glob(&p.glob, &path);
            }
            if !p.has_slash {
                let name = path.rsplit(|&c| c == '/').next().unwrap_or(&[]);
                return glob(&p.glob, name);
            }
            // The end of the path, from a component's start.
            (0..path.len()).filter(|&i| i == 0 || path[i - 1] == '/').any(|i| glob(&p.glob, &path[i..]))
        })
    }
}

/// Whether `text` matches `pattern` whole (`*`, `?` never cross `/`).
fn glob(pattern: &[char], text: &[char]) -> bool {
    // The classic two-pointer match with one backtrack point for the last `*`.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some('?') if text[t] != '/' => {
                p += 1;
                t += 1;
            }
            Some(&c) if c != '*' && c != '?' && c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                // The last star takes one more character, unless that is a slash.
                Some((sp, st)) if text[st] != '/' => {
                    star = Some((sp, st + 1));
                    p = sp + 1;
                    t = st + 1;
                }
                _ => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_as_rsync_reads_them() {
        let e = Exclude::new(&["*.o", "sub/*.tmp", "/tree/build", "cache/", ""]);
        assert!(e.matches("tree/a.o", false));
        assert!(e.matches("a.o", false));
        assert!(!e.matches("tree/a.oo", false));
        assert!(e.matches("tree/sub/x.tmp", false));
        assert!(!e.matches("tree/sub/deeper/x.tmp", false));
        assert!(!e.matches("tree/subx/x.tmp", false));
        assert!(e.matches("tree/build", true));
        assert!(!e.matches("other/tree/build", true));
        assert!(e.matches("tree/cache", true));
        assert!(!e.matches("tree/cache", false), "a trailing slash: directories only");
        assert!(!e.matches("tree/keep.txt", false));
        let q = Exclude::new(&["?.txt", "a*b*c"]);
        assert!(q.matches("d/x.txt", false) && !q.matches("d/xy.txt", false));
        assert!(q.matches("abxbyc", false) && !q.matches("abxby", false));
        assert!(Exclude::new(&["a*"]).matches("top/b/abc", true));
        assert!(!Exclude::new(&["a*c"]).matches("ab/c", false), "a star never crosses a slash");
        assert!(!Exclude::default().matches("anything", false));
    }
}
