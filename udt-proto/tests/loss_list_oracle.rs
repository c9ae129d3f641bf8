//! Oracle tests of the loss lists (in the manner of s2n-quic's `interval_set` tests): random
//! operations run on [`SendLossList`] / [`RecvLossList`] and on a model over *unwrapped*
//! numbers (`BTreeSet<u64>`, `BTreeMap<u64, _>`), compared after every step. The numbers live
//! around `0x7FFF_FF00`, so most runs cross the wrap from `0x7FFF_FFFF` to 0.
//!
//! Also: `SeqNo` arithmetic against plain `i64` arithmetic within the comparison window.

// Test code: helpers outside #[test] functions may panic on failure too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use proptest::prelude::*;
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use udt_proto::loss_list::{RecvLossList, Rereport, SendLossList};
use udt_proto::{Instant, SeqNo};

/// Unwrapped base of the tested window: 256 below 2^31.
const U0: u64 = 0x7FFF_FF00;
/// Numbers are drawn from `U0 - LOW .. U0 + HIGH`.
const LOW: u64 = 600;
const HIGH: u64 = 1400;
const SPACE: u64 = 1 << 31;

fn wrap(u: u64) -> SeqNo {
    SeqNo::new((u % SPACE) as u32)
}

fn unwrap(s: SeqNo) -> u64 {
    (U0 as i64 + i64::from(s.diff(wrap(U0)))) as u64
}

#[derive(Clone, Debug)]
enum Op {
    /// Insert `a..=a+len`, `a` an offset in the window.
    Insert(u64, u64),
    /// Insert just after the current last number, `gap` numbers later.
    Append(u64, u64),
    /// Insert with start after end (must be ignored).
    InsertReversed(u64, u64),
    Remove(u64),
    RemoveRange(u64, u64),
    RemoveBefore(u64),
    PopFirst,
    Clear,
    /// Advance the clock by this many ms and collect due ranges (receiver), at most `max`, on
    /// the growing schedule (`false`) or the steady one (`true`).
    CollectDue(u64, usize, bool),
}

fn op() -> impl Strategy<Value = Op> {
    let pos = 0..(LOW + HIGH);
    let len = prop_oneof![4 => 0u64..8, 1 => 0u64..300];
    prop_oneof![
        6 => (pos.clone(), len.clone()).prop_map(|(a, l)| Op::Insert(a, l)),
        6 => (0u64..20, len.clone()).prop_map(|(g, l)| Op::Append(g, l)),
        1 => (pos.clone(), 1u64..5).prop_map(|(a, l)| Op::InsertReversed(a, l)),
        4 => pos.clone().prop_map(Op::Remove),
        3 => (pos.clone(), len).prop_map(|(a, l)| Op::RemoveRange(a, l)),
        2 => pos.prop_map(Op::RemoveBefore),
        2 => Just(Op::PopFirst),
        1 => (0u32..50).prop_filter_map("rare", |x| (x == 0).then_some(Op::Clear)),
        3 => (0u64..40, prop_oneof![Just(usize::MAX), 0usize..4], any::<bool>())
            .prop_map(|(dt, m, steady)| Op::CollectDue(dt, m, steady)),
    ]
}

fn lo() -> u64 {
    U0 - LOW
}

fn expand(ranges: impl Iterator<Item = (SeqNo, SeqNo)>) -> Vec<(u64, u64)> {
    ranges.map(|(a, b)| (unwrap(a), unwrap(b))).collect()
}

/// Ranges are ordered, disjoint, non-empty; `merged` also requires gaps between them.
fn check_shape(ranges: &[(u64, u64)], merged: bool) -> Result<(), TestCaseError> {
    for &(a, b) in ranges {
        prop_assert!(a <= b, "empty or reversed range in {ranges:?}");
    }
    for w in ranges.windows(2) {
        let gap = if merged { 1 } else { 0 };
        prop_assert!(w[0].1 + gap < w[1].0, "unordered or unmerged ranges {ranges:?}");
    }
    Ok(())
}

fn numbers(ranges: &[(u64, u64)]) -> Vec<u64> {
    ranges.iter().flat_map(|&(a, b)| a..=b).collect()
}

fn check_send(l: &SendLossList, m: &BTreeSet<u64>, probes: &[u64]) -> Result<(), TestCaseError> {
    let r = expand(l.ranges());
    check_shape(&r, true)?;
    prop_assert_eq!(numbers(&r), m.iter().copied().collect::<Vec<_>>());
    prop_assert_eq!(l.len(), m.len());
    prop_assert_eq!(l.is_empty(), m.is_empty());
    prop_assert_eq!(l.first().map(unwrap), m.first().copied());
    for &p in probes {
        prop_assert_eq!(l.contains(wrap(p)), m.contains(&p), "contains({})", p);
    }
    Ok(())
}

fn check_recv(l: &RecvLossList, m: &BTreeMap<u64, (u64, u32)>, probes: &[u64]) -> Result<(), TestCaseError> {
    let r = expand(l.ranges());
    check_shape(&r, false)?;
    prop_assert_eq!(numbers(&r), m.keys().copied().collect::<Vec<_>>());
    prop_assert_eq!(l.len(), m.len());
    prop_assert_eq!(l.is_empty(), m.is_empty());
    prop_assert_eq!(l.first().map(unwrap), m.keys().next().copied());
    for &p in probes {
        prop_assert_eq!(l.contains(wrap(p)), m.contains_key(&p), "contains({})", p);
    }
    // Adjacent ranges with equal bookkeeping would have been merged: different ranges must
    // differ somewhere at their junction.
    for w in r.windows(2) {
        if w[0].1 + 1 == w[1].0 {
            prop_assert_ne!(m[&w[0].1], m[&w[1].0], "adjacent ranges with equal bookkeeping");
        }
    }
    Ok(())
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let mut send = SendLossList::new();
    let mut recv = RecvLossList::new();
    let mut ms: BTreeSet<u64> = BTreeSet::new();
    // number -> (last report, ms; times reported)
    let mut mr: BTreeMap<u64, (u64, u32)> = BTreeMap::new();
    let interval = Duration::from_millis(10);
    let mut now_ms: u64 = 1000;
    let now_of = |ms: u64| Instant::from_micros(ms * 1000);

    for op in ops {
        let mut probes = vec![lo(), U0 + 255, U0 + 256, U0 + 257];
        match *op {
            Op::Insert(a, len) | Op::Append(a, len) => {
                let a = match *op {
                    Op::Append(gap, _) => ms
                        .last()
                        .max(mr.keys().next_back())
                        .map_or(lo() + gap, |&x| x + 1 + gap)
                        .min(U0 + HIGH),
                    _ => lo() + a,
                };
                let b = a + len;
                let new_s = (a..=b).filter(|x| !ms.contains(x)).count() as u32;
                let new_r = (a..=b).filter(|x| !mr.contains_key(x)).count() as u32;
                prop_assert_eq!(send.insert(wrap(a), wrap(b)), new_s, "{:?}", op);
                prop_assert_eq!(recv.insert(wrap(a), wrap(b), now_of(now_ms)), new_r, "{:?}", op);
                ms.extend(a..=b);
                for x in a..=b {
                    mr.entry(x).or_insert((now_ms, 1));
                }
                probes.extend([a.saturating_sub(1), a, b, b + 1]);
            }
            Op::InsertReversed(a, len) => {
                let (a, b) = (lo() + a + len, lo() + a);
                prop_assert_eq!(send.insert(wrap(a), wrap(b)), 0);
                prop_assert_eq!(recv.insert(wrap(a), wrap(b), now_of(now_ms)), 0);
            }
            Op::Remove(a) => {
                let a = lo() + a;
                send.remove_range(wrap(a), wrap(a));
                ms.remove(&a);
                prop_assert_eq!(recv.remove(wrap(a)), mr.remove(&a).is_some());
                probes.extend([a.saturating_sub(1), a, a + 1]);
            }
            Op::RemoveRange(a, len) => {
                let (a, b) = (lo() + a, lo() + a + len);
                send.remove_range(wrap(a), wrap(b));
                let mut n = 0;
                for x in a..=b {
                    ms.remove(&x);
                    n += u32::from(mr.remove(&x).is_some());
                }
                prop_assert_eq!(recv.remove_range(wrap(a), wrap(b)), n);
                probes.extend([a.saturating_sub(1), a, b, b + 1]);
            }
            Op::RemoveBefore(a) => {
                let a = lo() + a;
                send.remove_before(wrap(a));
                recv.remove_before(wrap(a));
                ms.retain(|&x| x >= a);
                mr.retain(|&x, _| x >= a);
                probes.extend([a.saturating_sub(1), a]);
            }
            Op::PopFirst => {
                let expect = ms.pop_first();
                prop_assert_eq!(send.pop_first().map(unwrap), expect);
                // The receiver has no pop_first: remove its first number.
                if let Some(f) = recv.first() {
                    prop_assert!(recv.remove(f));
                    mr.remove(&unwrap(f));
                }
            }
            Op::Clear => {
                send.clear();
                ms.clear();
            }
            Op::CollectDue(dt, max, steady) => {
                now_ms += dt;
                let mut out = vec![(wrap(0), wrap(0)); usize::from(max == 1)];
                let pre = out.len();
                let schedule = if steady { Rereport::Steady } else { Rereport::Growing };
                recv.collect_due(now_of(now_ms), interval, schedule, max, &mut out);
                let reported = expand(out[pre..].iter().copied());
                check_shape(&reported, false)?;
                prop_assert!(out.len() <= max.max(pre), "{} ranges for max {}", out.len(), max);
                let due =
                    |&(last, k): &(u64, u32)| now_ms >= last + u64::from(if steady { 1 } else { k }) * 10;
                let got = numbers(&reported);
                for x in &got {
                    prop_assert!(due(&mr[x]), "{} reported but not due: {:?}", x, mr[x]);
                }
                // Due numbers are reported oldest first: all up to the last reported one, and
                // all of them when `out` did not fill up.
                let limit = if out.len() < max { u64::MAX } else { got.last().copied().unwrap_or(0) };
                let expect: Vec<u64> =
                    mr.iter().filter(|&(&x, v)| x <= limit && due(v)).map(|(&x, _)| x).collect();
                if out.len() < max || !got.is_empty() {
                    prop_assert_eq!(&got, &expect);
                }
                for x in got {
                    if let Some(e) = mr.get_mut(&x) {
                        *e = (now_ms, e.1 + 1);
                    }
                }
            }
        }
        check_send(&send, &ms, &probes)?;
        check_recv(&recv, &mr, &probes)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn loss_lists_match_the_model(ops in proptest::collection::vec(op(), 1..120)) {
        run(&ops)?;
    }
}

/// Long seeded runs: many more steps per run than proptest's cases.
#[test]
fn loss_lists_match_the_model_long_runs() {
    for seed in 0..40u64 {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut below = |n: u64| rng.next_u64() % n;
        let ops: Vec<Op> = (0..2000)
            .map(|_| {
                let len = if below(5) == 0 { below(300) } else { below(8) };
                match below(24) {
                    0..=5 => Op::Insert(below(LOW + HIGH), len),
                    6..=11 => Op::Append(below(20), len),
                    12 => Op::InsertReversed(below(LOW + HIGH), 1 + below(4)),
                    13..=15 => Op::Remove(below(LOW + HIGH)),
                    16..=18 => Op::RemoveRange(below(LOW + HIGH), len),
                    19 => Op::RemoveBefore(below(LOW + HIGH) / 4),
                    20 => Op::PopFirst,
                    _ => {
                        let max = if below(2) == 0 { usize::MAX } else { below(4) as usize };
                        Op::CollectDue(below(40), max, below(2) == 0)
                    }
                }
            })
            .collect();
        if let Err(e) = run(&ops) {
            panic!("seed {seed}: {e}");
        }
    }
}

/// `SeqNo` arithmetic against `i64` arithmetic on unwrapped numbers, for distances within the
/// comparison window (|d| <= 2^30 - 2), including across the wrap.
#[test]
fn seq_arithmetic_matches_unwrapped_model() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x5eed);
    const W: i64 = (1 << 30) - 2;
    for i in 0..200_000u32 {
        // Every fourth case starts right at the wrap.
        let a: i64 = if i % 4 == 0 {
            (1i64 << 31) - 64 + (rng.next_u64() % 128) as i64
        } else {
            (rng.next_u64() % (1 << 34)) as i64
        };
        let d: i64 = match i % 3 {
            0 => (rng.next_u64() % 200) as i64 - 100,
            _ => (rng.next_u64() % (2 * W as u64 + 1)) as i64 - W,
        };
        let b = a + d;
        if b < 0 {
            continue;
        }
        let (sa, sb) = (SeqNo::new((a % (1 << 31)) as u32), SeqNo::new((b % (1 << 31)) as u32));
        assert_eq!(i64::from(sb.diff(sa)), d, "diff a={a} d={d}");
        assert_eq!(i64::from(sa.diff(sb)), -d, "diff a={a} d={d}");
        assert_eq!(sa.add(d as i32), sb, "add a={a} d={d}");
        assert_eq!(sb.add(-d as i32), sa, "add a={a} d={d}");
        assert_eq!(sa.is_before(sb), d > 0, "is_before a={a} d={d}");
        assert_eq!(sb.is_before(sa), d < 0, "is_before a={a} d={d}");
        assert_eq!(sa.is_after(sb), d < 0, "is_after a={a} d={d}");
        let len = if d >= 0 { d + 1 } else { 0 };
        assert_eq!(i64::from(sa.len_to(sb)), len, "len_to a={a} d={d}");
        assert_eq!(sa.next().diff(sa), 1);
        assert_eq!(sa.prev().next(), sa);
    }
}

/// Large ranges anywhere in a 2^29 window around the wrap: nothing panics, `len` is the sum of
/// the range lengths, ranges stay ordered and disjoint, and their ends are `contains`-consistent.
#[test]
fn loss_lists_survive_large_ranges_in_a_2_pow_29_window() {
    const WIN: u64 = 1 << 29;
    let base = SPACE - WIN / 2; // the window straddles the wrap
    for seed in 0..200u64 {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut below = |n: u64| rng.next_u64() % n;
        let mut send = SendLossList::new();
        let mut recv = RecvLossList::new();
        let mut t = 0u64;
        for _ in 0..500 {
            let a = base + below(WIN);
            let len = match below(3) {
                0 => below(4),
                1 => below(1 << 16),
                _ => below(1 << 27),
            };
            let b = (a + len).min(base + WIN - 1);
            let (sa, sb) = (wrap(a), wrap(b));
            t += below(50_000);
            let now = Instant::from_micros(t);
            match below(7) {
                0 | 1 => {
                    send.insert(sa, sb);
                    recv.insert(sa, sb, now);
                }
                2 => {
                    send.remove_range(sa, sb);
                    recv.remove_range(sa, sb);
                }
                3 => {
                    send.remove_before(sa);
                    recv.remove_before(sa);
                }
                4 => {
                    send.pop_first();
                    recv.remove(sa);
                }
                5 => {
                    // Reversed arguments are ignored.
                    let (n1, n2) = (send.len(), recv.len());
                    if a != b {
                        assert_eq!(send.insert(sb, sa), 0);
                        assert_eq!(recv.insert(sb, sa, now), 0);
                        send.remove_range(sb, sa);
                        recv.remove_range(sb, sa);
                    }
                    assert_eq!((send.len(), recv.len()), (n1, n2));
                }
                _ => {
                    let mut out = Vec::new();
                    recv.collect_due(
                        now,
                        Duration::from_micros(below(100_000)),
                        Rereport::Growing,
                        8,
                        &mut out,
                    );
                    assert!(out.len() <= 8);
                }
            }
            for (len, ranges, contains) in [
                (
                    send.len(),
                    send.ranges().collect::<Vec<_>>(),
                    &(|s| send.contains(s)) as &dyn Fn(SeqNo) -> bool,
                ),
                (
                    recv.len(),
                    recv.ranges().collect::<Vec<_>>(),
                    &(|s| recv.contains(s)) as &dyn Fn(SeqNo) -> bool,
                ),
            ] {
                let sum: usize = ranges.iter().map(|&(a, b)| a.len_to(b) as usize).sum();
                assert_eq!(len, sum, "seed {seed}");
                for w in ranges.windows(2) {
                    assert!(w[0].1.is_before(w[1].0), "seed {seed}: {ranges:?}");
                }
                for &(a, b) in &ranges {
                    assert!(!b.is_before(a));
                    assert!(contains(a) && contains(b), "seed {seed}");
                    assert!(!contains(a.prev()) || ranges.iter().any(|r| r.1 == a.prev()));
                }
            }
        }
    }
}
