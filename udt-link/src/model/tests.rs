//! Tests of the link model: serialisation, the queue's limits, and the stages in order.

use super::*;
use crate::loss::GilbertElliott;
use crate::rng::stream;

const MS: Duration = Duration::from_millis(1);

fn droptail(rate_bps: u64, queue: QueueConfig) -> LinkModel {
    LinkModel::new(LinkConfig { queue, ..LinkConfig::new(rate_bps, Duration::ZERO, 0) }, SimRng::seed(1))
}

fn arrive(m: &mut LinkModel, now: Duration, len: usize) -> Option<Duration> {
    m.handle_arrival(now, len, Class::Ordinary).ok().map(|w| w.at)
}

#[test]
fn serialisation_is_exact_in_the_long_run() {
    let mut l = droptail(155_520_000, QueueConfig::DropTailPackets(10));
    let total: u64 = (0..155_520).map(|_| l.serialisation_ns(155_520_000, 1500)).sum();
    // 155,520 packets of 12,000 bits on 155.52 Mb/s take exactly 12 s.
    assert_eq!(total, 12_000_000_000);
}

#[test]
fn serializes_back_to_back_at_the_rate() {
    // 1500 bytes at 12 Mbit/s = 1 ms each.
    let mut b = droptail(12_000_000, QueueConfig::DropTailPackets(100));
    let t0 = Duration::from_secs(1);
    let deps: Vec<_> = (0..5).map(|_| arrive(&mut b, t0, 1500).unwrap()).collect();
    assert_eq!(deps, (1..=5).map(|i| t0 + MS * i).collect::<Vec<_>>());
    // An idle link sends immediately.
    assert_eq!(arrive(&mut b, t0 + MS * 100, 750), Some(t0 + MS * 100 + MS / 2));
}

#[test]
fn a_rate_change_applies_to_the_packets_after_it() {
    // 1 ms per packet at 12 Mbit/s; the rate halves with two packets queued: they keep their
    // times, the next ones take 2 ms each, after the queue ahead of them.
    let mut b = droptail(12_000_000, QueueConfig::DropTailPackets(100));
    let t0 = Duration::from_secs(1);
    assert_eq!(arrive(&mut b, t0, 1500), Some(t0 + MS));
    assert_eq!(arrive(&mut b, t0, 1500), Some(t0 + MS * 2));
    b.set_rate(Some(6_000_000));
    assert_eq!(arrive(&mut b, t0, 1500), Some(t0 + MS * 4));
    b.set_rate(Some(12_000_000));
    assert_eq!(arrive(&mut b, t0 + MS * 10, 1500), Some(t0 + MS * 11));
}

#[test]
fn long_run_throughput_equals_rate() {
    let rate = 100_000_000;
    let mut b = droptail(rate, QueueConfig::DropTailPackets(10_000));
    let mut last = Duration::ZERO;
    let n = 10_000u64;
    for _ in 0..n {
        last = arrive(&mut b, Duration::ZERO, 1250).unwrap(); // 100 us each
    }
    assert_eq!(last, Duration::from_micros(100) * n as u32);
    let achieved = (n * 1250 * 8) as f64 / last.as_secs_f64();
    assert!((achieved - rate as f64).abs() < 1.0, "{achieved}");
}

#[test]
fn droptail_in_packets_counts_the_waiting_ones() {
    let mut b = droptail(12_000_000, QueueConfig::DropTailPackets(3));
    let t = Duration::ZERO;
    // One in service and three waiting.
    for i in 0..4u32 {
        assert_eq!(b.handle_arrival(t, 1500, Class::Ordinary).map(|w| w.queued), Ok(i as usize));
    }
    assert_eq!(b.handle_arrival(t, 1500, Class::Ordinary), Err(Dropped::Full), "fifth packet overflows");
    assert_eq!(b.occupancy(t), Occupancy { waiting: 3, waiting_bytes: 4500, in_service: true });
    // After the first departs (1 ms) there is room for one more, which queues behind the rest.
    assert_eq!(arrive(&mut b, MS, 1500), Some(MS * 5));
    assert_eq!(arrive(&mut b, MS, 1500), None);
    // A reliable packet is never refused.
    assert_eq!(b.handle_arrival(MS, 1500, Class::Reliable).map(|w| (w.at, w.queued)), Ok((MS * 6, 4)));
    assert_eq!(b.occupancy(MS * 6), Occupancy::default());
}

#[test]
fn droptail_in_bytes_and_overload_drop_fraction() {
    let mut b = droptail(12_000_000, QueueConfig::DropTailBytes(4000));
    assert!(arrive(&mut b, Duration::ZERO, 1500).is_some(), "in service: not counted");
    assert!(arrive(&mut b, Duration::ZERO, 1500).is_some());
    assert!(arrive(&mut b, Duration::ZERO, 1500).is_some());
    assert_eq!(arrive(&mut b, Duration::ZERO, 1500), None);
    assert!(arrive(&mut b, Duration::ZERO, 1000).is_some(), "a smaller packet still fits");
    assert_eq!(b.occupancy(Duration::ZERO).waiting_bytes, 4000);

    // Offer twice the rate for a long time: about half is dropped.
    let mut b = droptail(12_000_000, QueueConfig::DropTailPackets(50));
    let (mut sent, mut dropped) = (0, 0);
    for i in 0..20_000u32 {
        match arrive(&mut b, MS / 2 * i, 1500) {
            Some(_) => sent += 1,
            None => dropped += 1,
        }
    }
    assert!((dropped - 10_000i32).abs() < 100, "sent {sent} dropped {dropped}");
}

#[test]
fn unlimited_rate_passes_everything_at_once() {
    let mut b = LinkModel::new(LinkConfig::ideal(), SimRng::seed(1));
    for i in 0..1000u32 {
        assert_eq!(arrive(&mut b, MS * i, 1500), Some(MS * i));
    }
}

#[test]
fn mtu_drops_ordinary_packets_only() {
    let cfg = LinkConfig { mtu: Some(1500), ..LinkConfig::delay(MS) };
    let mut m = LinkModel::new(cfg, SimRng::seed(1));
    assert_eq!(m.handle_arrival(MS, 1501, Class::Ordinary), Err(Dropped::Mtu));
    assert_eq!(m.handle_arrival(MS, 1501, Class::Reliable).map(|w| m.propagate(w.at)), Ok(MS * 2));
    let p = m.handle_packet(MS, 1500).unwrap();
    assert_eq!(p.delivery, Delivery { at: MS * 2, corrupt: None, reordered: false });
}

#[test]
fn rate_plus_delay_gives_serialization_then_propagation() {
    let mut m = LinkModel::new(LinkConfig::new(12_000_000, MS * 20, 10), SimRng::seed(1));
    let v: Vec<_> = (0..12).map(|_| m.handle_packet(Duration::ZERO, 1500)).collect();
    for (i, v) in v.iter().enumerate().take(11) {
        let at = MS * (21 + i as u32);
        assert_eq!(v.map(|p| p.delivery), Ok(Delivery { at, corrupt: None, reordered: false }));
    }
    assert_eq!(v[11], Err(Dropped::Full));
    assert_eq!(m.occupancy(Duration::ZERO).waiting, 10);
}

#[test]
fn a_lost_packet_used_the_capacity() {
    let cfg = LinkConfig { loss: LossModel::Bernoulli(1.0), ..LinkConfig::new(12_000_000, MS, 10) };
    let mut m = LinkModel::new(cfg, SimRng::seed(1));
    assert_eq!(m.handle_packet(Duration::ZERO, 1500), Err(Dropped::Lost));
    assert!(m.occupancy(Duration::ZERO).in_service);
    let on_wire = m.handle_arrival(Duration::ZERO, 1500, Class::Ordinary).unwrap();
    assert_eq!(on_wire, OnWire { at: MS * 2, queued: 1 });
}

#[test]
fn red_drops_early_through_the_model() {
    let red =
        crate::queue::RedConfig { weight: 1.0, ..crate::queue::RedConfig::ns2_auto(1000, 12_000_000, MS) };
    let cfg = LinkConfig { queue: QueueConfig::Red(red), ..LinkConfig::new(12_000_000, MS, 0) };
    let mut m = LinkModel::new(cfg, stream(1, 2));
    let fates: Vec<_> = (0..200).map(|_| m.handle_arrival(Duration::ZERO, 1500, Class::Ordinary)).collect();
    let early = fates.iter().filter(|f| **f == Err(Dropped::Early)).count();
    assert!(early > 0 && fates.iter().all(|f| *f != Err(Dropped::Full)), "{early}");
    assert!(m.red_average() > red.min_th);
}

#[test]
fn same_seed_same_passages() {
    let cfg = LinkConfig {
        jitter: Jitter { amount: MS, dist: crate::delay::JitterDist::Uniform },
        loss: LossModel::GilbertElliott(GilbertElliott::from_rate_and_burst(0.05, 3.0)),
        impair: Impairments { reorder: 0.01, reorder_delay: MS, duplicate: 0.01, corrupt: 0.01 },
        ..LinkConfig::new(50_000_000, MS * 5, 100)
    };
    let run = |seed| {
        let mut m = LinkModel::new(cfg, SimRng::seed(seed));
        (0..5000u32).map(|i| m.handle_packet(Duration::from_micros(50) * i, 1200)).collect::<Vec<_>>()
    };
    assert_eq!(run(9), run(9));
    assert_ne!(run(9), run(10));
}

#[test]
fn duplication_and_corruption_counts() {
    let cfg = LinkConfig {
        impair: Impairments { duplicate: 0.02, corrupt: 0.01, ..Impairments::default() },
        ..LinkConfig::ideal()
    };
    let mut m = LinkModel::new(cfg, SimRng::seed(5));
    let n = 100_000u32;
    let passages: Vec<Passage> =
        (0..n).map(|i| m.handle_packet(Duration::from_micros(10) * i, 1000).unwrap()).collect();
    let dups = passages.iter().filter(|p| p.duplicated).count();
    let corrupt = passages.iter().filter(|p| p.delivery.corrupt.is_some()).count();
    assert!((dups as i64 - 2000).abs() < 180, "dups {dups}");
    assert!((corrupt as i64 - 1000).abs() < 130, "corrupt {corrupt}");
}
