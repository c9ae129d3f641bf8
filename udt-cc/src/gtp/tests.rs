//! Controller-level tests of GTP: both halves driven through the `CongestionControl` callbacks.

use std::time::Duration;

use rand_xoshiro::rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::*;
use udt_proto::connection::Stats;
use udt_proto::time::Instant;

const M: u64 = 1_000_000;

/// Run `f` with a context at `now` (MSS 1500, RTT 10 ms, flow window 25600).
fn with_ctx<R>(now: Instant, rcv_loss: u64, f: impl FnOnce(&mut CcContext<'_>) -> R) -> R {
    let mut stats = Stats::new(Instant::ZERO);
    stats.total.rcv_loss = rcv_loss;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let mut ctx = CcContext {
        now,
        mss: 1500,
        payload_size: 1456,
        syn_interval: Duration::from_millis(10),
        rtt: Duration::from_millis(10),
        rtt_var: Duration::from_millis(5),
        recv_rate: 0,
        bandwidth: 0,
        snd_curr_seq: SeqNo::new(0),
        last_ack: SeqNo::new(1),
        max_window: 25_600,
        flight: 0,
        measured_send_period: None,
        stats: &stats,
        ack: None,
        peer_udt4: false,
        rng: &mut rng,
    };
    f(&mut ctx)
}

fn us(v: u64) -> Instant {
    Instant::from_micros(v)
}

fn factory(capacity: u64) -> GtpFactory {
    let manager = ManagerConfig { capacity, ..ManagerConfig::default() };
    GtpFactory::new(GtpConfig { manager, ..GtpConfig::default() })
}

/// Feed `cc` one packet every `gap_us` from `start_us` until (and including) `end_us`; returns
/// the messages it produced, with the time of the packet that produced each.
fn feed(
    cc: &mut dyn CongestionControl,
    start_us: u64,
    gap_us: u64,
    end_us: u64,
) -> Vec<(u64, CustomMessage)> {
    let mut out = Vec::new();
    let mut t = start_us;
    while t <= end_us {
        with_ctx(us(t), 0, |ctx| cc.on_packet_received(ctx, SeqNo::new(0)));
        while let Some(m) = cc.poll_custom_message() {
            out.push((t, m));
        }
        t += gap_us;
    }
    out
}

#[test]
fn receiver_sends_an_allocation_after_one_interval() {
    let f = factory(300 * M);
    let mut cc = f.build();
    with_ctx(us(0), 0, |ctx| cc.init(ctx));
    assert_eq!(cc.poll_custom_message(), None, "no request configured");
    // 100 Mb/s: one 1500-byte packet every 120 us from 1 ms. The first interval is one SYN
    // (10 ms): the packet at 11.08 ms (the 85th) closes it; the only flow gets all 300 Mb/s.
    // Later intervals are max(SYN, RTT) = 10 ms as well.
    assert!(feed(&mut *cc, 1000, 120, 10_960).is_empty());
    let msgs = feed(&mut *cc, 11_080, 120, 21_000);
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].0, 1000 + 84 * 120);
    assert_eq!(
        GtpMessage::decode(&msgs[0].1),
        Some(Ok(GtpMessage::Allocation { number: 1, bits_per_sec: 300 * M }))
    );
    let demands = lock(&f.manager()).demands();
    assert_eq!(demands.len(), 1);
    // A second interval: number 2.
    let msgs = feed(&mut *cc, 21_080, 120, 21_200);
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].1.info, 2);
}

#[test]
fn three_receivers_split_the_capacity() {
    let f = factory(M * 1000);
    let mut ccs: Vec<_> = (0..3).map(|_| f.build()).collect();
    for cc in &mut ccs {
        feed(&mut **cc, 0, 120, 0);
    }
    for cc in &mut ccs {
        let msgs = feed(&mut **cc, 120, 120, 10_080);
        assert_eq!(
            GtpMessage::decode(&msgs[0].1),
            Some(Ok(GtpMessage::Allocation { number: 1, bits_per_sec: 333_333_333 }))
        );
    }
    assert_eq!(lock(&f.manager()).len(), 3);
}

#[test]
fn sender_adopts_the_allocated_rate() {
    let mut cc = factory(M * 1000).build();
    with_ctx(us(0), 0, |ctx| cc.init(ctx));
    // Initial 10 Mb/s: 12000 bits every 1.2 ms; the window is the flow window.
    assert_eq!(cc.send_period(), Duration::from_micros(1200));
    assert_eq!(cc.congestion_window(), 25_600.0);
    let alloc = GtpMessage::Allocation { number: 1, bits_per_sec: 120 * M }.encode();
    with_ctx(us(1000), 0, |ctx| cc.on_custom_message(ctx, &alloc));
    assert_eq!(cc.send_period(), Duration::from_micros(100));
    // 333 333 333 b/s: 12000 / 333333333 s = 36.000000036 us -> 36000 ns.
    let alloc = GtpMessage::Allocation { number: 2, bits_per_sec: 333_333_333 }.encode();
    with_ctx(us(2000), 0, |ctx| cc.on_custom_message(ctx, &alloc));
    assert_eq!(cc.send_period(), Duration::from_nanos(36_000));
    // A stale allocation (number 1 again) is ignored.
    let stale = GtpMessage::Allocation { number: 1, bits_per_sec: 12 * M }.encode();
    with_ctx(us(3000), 0, |ctx| cc.on_custom_message(ctx, &stale));
    assert_eq!(cc.send_period(), Duration::from_nanos(36_000));
}

#[test]
fn sender_cuts_on_loss_once_per_rtt_until_the_next_allocation() {
    let f = factory(M * 1000);
    let mut cc = f.build();
    with_ctx(us(0), 0, |ctx| cc.init(ctx));
    let alloc = GtpMessage::Allocation { number: 1, bits_per_sec: 96 * M }.encode();
    with_ctx(us(0), 0, |ctx| cc.on_custom_message(ctx, &alloc));
    assert_eq!(cc.send_period(), Duration::from_micros(125));
    let lost = [(SeqNo::new(5), SeqNo::new(6))];
    with_ctx(us(1000), 0, |ctx| cc.on_loss(ctx, &lost)); // 84 Mb/s
    with_ctx(us(5000), 0, |ctx| cc.on_loss(ctx, &lost)); // within the 10 ms RTT: no cut
    assert_eq!(cc.send_period(), Duration::from_nanos(142_857));
    with_ctx(us(11_000), 0, |ctx| cc.on_timeout(ctx)); // 73.5 Mb/s
    assert_eq!(cc.send_period(), Duration::from_nanos(163_265));
    let alloc = GtpMessage::Allocation { number: 2, bits_per_sec: 96 * M }.encode();
    with_ctx(us(12_000), 0, |ctx| cc.on_custom_message(ctx, &alloc));
    assert_eq!(cc.send_period(), Duration::from_micros(125));
}

#[test]
fn malformed_messages_are_counted_and_ignored() {
    let mut gtp = Gtp::new(GtpConfig::default(), factory(M).manager());
    let before = gtp.send_period();
    let bad = [
        CustomMessage { subtype: GTP_SUBTYPE, info: 1, data: vec![] },
        CustomMessage { subtype: GTP_SUBTYPE, info: 1, data: vec![2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1] },
        CustomMessage { subtype: GTP_SUBTYPE, info: 1, data: vec![1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] },
    ];
    for m in &bad {
        with_ctx(us(0), 0, |ctx| gtp.on_custom_message(ctx, m));
    }
    let foreign = CustomMessage { subtype: 7, info: 0, data: vec![1, 2, 3] };
    with_ctx(us(0), 0, |ctx| gtp.on_custom_message(ctx, &foreign));
    assert_eq!(gtp.malformed_messages(), 3);
    assert_eq!(gtp.send_period(), before);
    assert_eq!(gtp.allocation(), None);
}

#[test]
fn requests_reach_the_manager_and_are_resent_when_ignored() {
    let config = GtpConfig { request: 50 * M, ..GtpConfig::default() };
    let mut sender = Gtp::new(config, Arc::new(Mutex::new(GroupManager::new(ManagerConfig::default()))));
    with_ctx(us(0), 0, |ctx| sender.init(ctx));
    let request = sender.poll_custom_message().expect("request at init");
    assert_eq!(GtpMessage::decode(&request), Some(Ok(GtpMessage::Request { bits_per_sec: 50 * M })));
    // An allocation above the request: capped, and the request goes out again.
    let alloc = GtpMessage::Allocation { number: 1, bits_per_sec: 500 * M }.encode();
    with_ctx(us(10), 0, |ctx| sender.on_custom_message(ctx, &alloc));
    assert_eq!(sender.rate_bits_per_sec(), 50 * M);
    assert_eq!(sender.poll_custom_message(), Some(request.clone()));

    // At the receiver the request caps the flow's demand.
    let f = factory(M * 1000);
    let mut receiver = f.build();
    with_ctx(us(0), 0, |ctx| receiver.on_custom_message(ctx, &request));
    let msgs = feed(&mut *receiver, 0, 120, 10_080);
    assert_eq!(
        GtpMessage::decode(&msgs[0].1),
        Some(Ok(GtpMessage::Allocation { number: 1, bits_per_sec: 50 * M }))
    );
}

#[test]
fn loss_at_the_receiver_caps_the_allocation() {
    let f = factory(M * 1000);
    let mut cc = f.build();
    feed(&mut *cc, 0, 120, 9960); // 84 packets, interval not closed yet
                                  // 4 packets lost during the interval: 4 / 88 > 1 %; capped at 7/8 of the 100 Mb/s that
                                  // arrived.
    let msg = with_ctx(us(10_080), 4, |ctx| {
        cc.on_packet_received(ctx, SeqNo::new(0));
        cc.poll_custom_message()
    });
    let msg = msg.expect("allocation");
    assert_eq!(
        GtpMessage::decode(&msg),
        Some(Ok(GtpMessage::Allocation { number: 1, bits_per_sec: 87_500_000 }))
    );
}

#[test]
fn flows_leave_on_close_and_on_drop() {
    let f = factory(M * 1000);
    let (mut a, mut b) = (f.build(), f.build());
    feed(&mut *a, 0, 120, 0);
    feed(&mut *b, 0, 120, 0);
    assert_eq!(lock(&f.manager()).len(), 2);
    with_ctx(us(500), 0, |ctx| a.close(ctx));
    assert_eq!(lock(&f.manager()).len(), 1);
    drop(b);
    assert!(lock(&f.manager()).is_empty());
    // A controller that never received data never joined.
    let c = f.build();
    drop(c);
    assert!(lock(&f.manager()).is_empty());
}

#[test]
fn a_poisoned_manager_is_still_used() {
    let f = factory(M * 1000);
    let manager = f.manager();
    let poisoner = std::thread::spawn(move || {
        let _guard = manager.lock();
        panic!("poison the group manager");
    });
    assert!(poisoner.join().is_err());
    assert!(f.manager().is_poisoned());
    let mut cc = f.build();
    let msgs = feed(&mut *cc, 0, 120, 10_080);
    assert_eq!(
        GtpMessage::decode(&msgs[0].1),
        Some(Ok(GtpMessage::Allocation { number: 1, bits_per_sec: 1000 * M }))
    );
}
