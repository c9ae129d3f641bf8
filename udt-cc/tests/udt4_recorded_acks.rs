//! The model controller, which the default (Copa) hands a flow to a UDT4 receiver, fed with
//! what real UDT4 4.11 receivers sent (the captures
//! in `testdata/vectors`): every data packet the capture's sender sent, as it sent it, and
//! every full ACK and NAK its receiver sent back, at their capture times.
//!
//! A UDT4 receiver's first full ACKs report an arrival speed of 1 packet/s (its window starts
//! filled with made-up 1 s gaps) whatever arrived; a controller that paces on that report
//! alone crawls at a packet every few hundred milliseconds until the receiver's median catches
//! up, which the crawl itself delays. What the ACKs acknowledged tells the real delivery.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../udt-proto/tests/support/mod.rs"]
mod support;

use std::net::SocketAddrV4;
use std::time::Duration;

use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use support::pcap::{read_pcap, vectors_dir};
use udt_proto::cc::{AckReport, CcContext, CongestionControl};
use udt_proto::connection::Stats;
use udt_proto::packet::{Control, Packet};
use udt_proto::seq::SeqNo;
use udt_proto::Instant;

/// The controller's pacing rate, packets/s (UDT's packet pair: 16 packets per 15 periods).
fn rate(cc: &dyn CongestionControl) -> f64 {
    16.0 / 15.0 / cc.send_period().as_secs_f64()
}

/// The controller's view at `now_us` (the sender's state as the capture shows it).
fn ctx<'a>(
    now_us: u64,
    largest: SeqNo,
    last_ack: SeqNo,
    flight: u32,
    stats: &'a Stats,
    rng: &'a mut Xoshiro256PlusPlus,
) -> CcContext<'a> {
    CcContext {
        now: Instant::ZERO + Duration::from_micros(now_us),
        mss: 1500,
        payload_size: 1456,
        syn_interval: Duration::from_millis(10),
        rtt: Duration::from_millis(100),
        rtt_var: Duration::from_millis(50),
        recv_rate: 0,
        bandwidth: 0,
        snd_curr_seq: largest,
        last_ack,
        max_window: 8192,
        flight,
        measured_send_period: None,
        stats,
        ack: None,
        peer_udt4: false,
        rng,
    }
}

/// What a replay observed.
struct Replay {
    /// The pacing rate before any ACK, and after each full ACK (with the ACK's reported rate).
    initial: f64,
    after_acks: Vec<(u32, f64)>,
    /// Packets the receiver acknowledged over the time from the first data packet to the last
    /// ACK: the delivery rate the capture shows, packets/s.
    delivered_rate: f64,
}

fn replay(capture: &str) -> Replay {
    let (_, datagrams) = read_pcap(&vectors_dir().join(capture));
    let packets: Vec<(u64, SocketAddrV4, Packet<'_>)> = datagrams
        .iter()
        .filter_map(|d| Packet::parse(&d.payload).ok().map(|p| (d.time_us, d.src, p)))
        .collect();
    // The data sender: the end that sent most data packets (the receiving end sends a request
    // first, in a data packet of its own).
    let mut counts: Vec<(SocketAddrV4, usize)> = Vec::new();
    for (_, src, p) in &packets {
        if matches!(p, Packet::Data(..)) {
            match counts.iter_mut().find(|(a, _)| a == src) {
                Some((_, n)) => *n += 1,
                None => counts.push((*src, 1)),
            }
        }
    }
    let sender = counts.iter().max_by_key(|(_, n)| *n).map(|(a, _)| *a).expect("a data packet");
    let first_seq = packets
        .iter()
        .find_map(|(_, src, p)| match p {
            Packet::Data(h, _) if *src == sender => Some(h.seq),
            _ => None,
        })
        .unwrap();
    let mut cc = udt_cc::factory("model").unwrap().build();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let stats = Stats::default();
    let (mut largest, mut last_ack, mut flight) = (first_seq.prev(), first_seq, 0u32);
    let (mut first_sent, mut last_ack_at, mut acked) = (None, 0u64, 0u64);
    let start = packets[0].0;
    cc.init(&mut ctx(0, largest, last_ack, 0, &stats, &mut rng));
    let initial = rate(cc.as_ref());
    let mut after_acks = Vec::new();
    for (t, src, p) in &packets {
        let now = t - start;
        match p {
            Packet::Data(h, _) if *src == sender => {
                let retransmission = !h.seq.is_after(largest);
                if !retransmission {
                    largest = h.seq;
                }
                first_sent.get_or_insert(now);
                flight = largest.diff(last_ack.prev()).max(0) as u32;
                cc.on_packet_sent(
                    &mut ctx(now, largest, last_ack, flight, &stats, &mut rng),
                    h.seq,
                    retransmission,
                );
            }
            Packet::Control(c) if *src != sender => match &c.body {
                Control::Ack(ack) => {
                    let Some(info) = ack.info else { continue };
                    if ack.next_expected.is_after(last_ack) {
                        acked += ack.next_expected.diff(last_ack) as u64;
                        last_ack = ack.next_expected;
                        last_ack_at = now;
                    }
                    flight = largest.diff(last_ack.prev()).max(0) as u32;
                    let report = AckReport {
                        rtt: Duration::from_micros(u64::from(info.rtt_us)),
                        recv_rate: info.rates.map_or(0, |r| r.recv_rate),
                        capacity: info.rates.map_or(0, |r| r.capacity),
                        queue: None,
                    };
                    let mut c = ctx(now, largest, last_ack, flight, &stats, &mut rng);
                    c.ack = Some(report);
                    cc.on_ack(&mut c, last_ack);
                    after_acks.push((report.recv_rate, rate(cc.as_ref())));
                }
                Control::Nak(list) => {
                    let ranges: Vec<(SeqNo, SeqNo)> = list.iter().map(|e| e.bounds()).collect();
                    cc.on_loss(&mut ctx(now, largest, last_ack, flight, &stats, &mut rng), &ranges);
                }
                _ => {}
            },
            _ => {}
        }
    }
    let span = (last_ack_at - first_sent.unwrap()) as f64 / 1e6;
    Replay { initial, after_acks, delivered_rate: acked as f64 / span }
}

/// The first full ACK of a UDT4 receiver reports 1 packet/s: the controller keeps at least its
/// initial rate, and after the replay paces at no less than what the capture delivered.
#[test]
fn a_udt4_receivers_first_reports_do_not_slow_the_model_controller() {
    for capture in ["sendfile_recvfile_100KB.pcap", "sendfile_recvfile_4MiB_3pct_drop.pcap"] {
        let r = replay(capture);
        let (first_report, after_first) = r.after_acks[0];
        assert_eq!(first_report, 1, "{capture}: UDT4's made-up first report");
        assert!(
            after_first >= r.initial,
            "{capture}: after a report of 1 packet/s the controller paces at {after_first:.1} packets/s, below its initial {:.1}",
            r.initial
        );
        let (_, last) = *r.after_acks.last().unwrap();
        assert!(
            last >= r.delivered_rate,
            "{capture}: pacing at {last:.0} packets/s after the replay, below the {:.0} delivered",
            r.delivered_rate
        );
        eprintln!(
            "{capture}: initial {:.0}/s, after the first ACK {after_first:.0}/s, last {last:.0}/s, delivered {:.0}/s over {} ACKs",
            r.initial,
            r.delivered_rate,
            r.after_acks.len()
        );
    }
}
