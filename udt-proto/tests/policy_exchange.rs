//! The policy exchange: a receiver reports what the *peer's* sender asked for, whatever
//! controller the receiving end runs; a lost offer is repaired while its end sends data; ends
//! that ask nothing beyond UDT4 put no offer on the wire; an offer is answered at most once;
//! the controller learns that a peer which left every offer unanswered is UDT4's.

// Test code: helpers outside #[test] functions may panic on failure too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use support::{test_data, LinkModel, Pair, Side};
use udt_proto::cc::{CcFactory, CongestionControl, FixedRate, Policy};
use udt_proto::connection::{Config, Offer, MAX_UNANSWERED_OFFERS, POLICY_SUBTYPE};
use udt_proto::packet::{Control, ControlPacket, Packet};

/// A paced controller (1 ms a packet) whose factory declares `.0` as the policy it needs.
#[derive(Debug)]
struct Declaring(Policy);

impl CcFactory for Declaring {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(FixedRate::new(Duration::from_millis(1), 100_000.0))
    }
    fn policy(&self) -> Policy {
        self.0
    }
}

fn config(policy: Policy) -> Config {
    Config { cc: Arc::new(Declaring(policy)), ..Config::default() }
}

/// The offers seen on the wire: (destination, heard flag).
type Seen = Rc<RefCell<Vec<(Side, bool)>>>;

/// Connect with `client` and `server` configurations over a 40 ms RTT, dropping the first
/// `drop_to_server` offers towards the server; the client sends 400 packets of data. Returns
/// the pair after the transfer and the offers that were sent.
fn run(client: Config, server: Config, drop_to_server: usize) -> (Pair, Seen) {
    let link = LinkModel { delay: Duration::from_millis(20), ..LinkModel::default() };
    let mut pair = Pair::new(3, link, link, server);
    let seen: Seen = Rc::default();
    let log = seen.clone();
    let mut dropped = 0;
    pair.filter = Some(Box::new(move |dest, bytes| {
        let Ok(Packet::Control(ControlPacket { body: Control::UserDefined { subtype, info, data }, .. })) =
            Packet::parse(bytes)
        else {
            return true;
        };
        assert_eq!(subtype, POLICY_SUBTYPE, "no other user-defined packet in this test");
        let offer = Offer::decode(info, data).expect("a well-formed offer");
        log.borrow_mut().push((dest, offer.heard));
        if dest == Side::Server && dropped < drop_to_server {
            dropped += 1;
            return false;
        }
        true
    }));
    pair.connect(client);
    assert!(pair.run_until(Duration::from_secs(5), |p| p.connected()));
    transfer(&mut pair, 400);
    (pair, seen)
}

/// The client sends `packets` packets of data to the server.
fn transfer(pair: &mut Pair, packets: usize) {
    let data = test_data(packets * 1400, 9);
    let (mut written, mut got) = (0, 0);
    let mut buf = vec![0u8; 1 << 20];
    assert!(pair.run_until(Duration::from_secs(20), |p| {
        let client = p.client.as_mut().unwrap();
        if written < data.len() {
            written += client.write(&data[written..]).unwrap_or(0);
        }
        let server = p.server.as_mut().unwrap();
        while let Ok(n) = server.read(&mut buf) {
            if n == 0 {
                break;
            }
            got += n;
        }
        got >= data.len()
    }));
}

#[test]
fn the_receiver_reports_what_the_peers_sender_asked_for_not_what_its_own_controller_needs() {
    let (mut pair, seen) = run(config(Policy::PROGRESS_REPORTS), config(Policy::UDT4), 0);
    let server = pair.conn(Side::Server).unwrap();
    assert!(server.policy().progress_acks && server.policy().counted_arrival_rate, "{:?}", server.policy());
    assert!(!server.policy().learn_from_repeated_acks, "the server's sending half stays its own");
    let client = pair.conn(Side::Client).unwrap();
    assert_eq!(
        *client.policy(),
        Policy::PROGRESS_REPORTS.receiving_as(&Policy::UDT4),
        "the server asked nothing"
    );
    // The client offered once; the server, which asks nothing, answered once; the client
    // answered the first offer it heard (the server's answer), which is answered no more.
    assert_eq!(*seen.borrow(), vec![(Side::Server, false), (Side::Client, true), (Side::Server, true)]);
}

#[test]
fn the_controller_of_the_receiving_end_no_longer_decides_its_reports() {
    let (mut pair, _) = run(config(Policy::UDT4), config(Policy::PROGRESS_REPORTS), 0);
    let server = pair.conn(Side::Server).unwrap();
    assert!(!server.policy().progress_acks && !server.policy().counted_arrival_rate, "{:?}", server.policy());
    assert!(server.policy().learn_from_repeated_acks, "its own sending half");
    let client = pair.conn(Side::Client).unwrap();
    assert!(client.policy().progress_acks, "the client reports what the server's sender asked for");
}

#[test]
fn a_lost_offer_is_repaired_with_the_acknowledgements_of_the_data() {
    let (mut pair, seen) = run(config(Policy::PROGRESS_REPORTS), config(Policy::UDT4), 2);
    assert!(pair.conn(Side::Server).unwrap().policy().progress_acks);
    let unprompted = seen.borrow().iter().filter(|&&o| o == (Side::Server, false)).count();
    assert_eq!(unprompted, 3, "two lost, the third heard: {:?}", seen.borrow());
    assert_eq!(seen.borrow().iter().filter(|(d, _)| *d == Side::Client).count(), 1, "answered once");
}

#[test]
fn an_unanswered_offer_is_repeated_a_bounded_number_of_times() {
    let (mut pair, seen) = run(config(Policy::PROGRESS_REPORTS), config(Policy::UDT4), usize::MAX);
    assert!(!pair.conn(Side::Server).unwrap().policy().progress_acks, "every offer was lost");
    assert_eq!(seen.borrow().len(), usize::from(MAX_UNANSWERED_OFFERS), "{:?}", seen.borrow());
}

#[test]
fn ends_that_ask_nothing_beyond_udt4_send_no_offer() {
    let (_, seen) = run(config(Policy::UDT4), config(Policy::UDT4.with_head_probe(true)), 0);
    assert!(seen.borrow().is_empty(), "{:?}", seen.borrow());
}

#[test]
fn two_ends_that_both_ask_exchange_at_most_four_offers_and_both_follow() {
    let (mut pair, seen) = run(config(Policy::PROGRESS_REPORTS), config(Policy::PROGRESS_REPORTS), 0);
    assert!(seen.borrow().len() <= 4, "{:?}", seen.borrow());
    for side in [Side::Client, Side::Server] {
        assert_eq!(*pair.conn(side).unwrap().policy(), Policy::PROGRESS_REPORTS);
    }
}

#[test]
fn an_end_that_heard_the_peer_repeats_its_offer_until_the_peer_proves_it_heard_it() {
    // Both ask. The client's first offer is lost, and so is its answer to the server's offer:
    // the client has heard the server, but the server has heard nothing, and as a receiver it
    // sends no ACK2s to repeat its own with. The client repeats its offer until one gets through.
    let (mut pair, seen) = run(config(Policy::PROGRESS_REPORTS), config(Policy::PROGRESS_REPORTS), 2);
    let to_server: Vec<bool> =
        seen.borrow().iter().filter(|(d, _)| *d == Side::Server).map(|&(_, h)| h).collect();
    assert!(to_server.len() >= 3 && to_server[2..].iter().all(|&h| h), "{:?}", seen.borrow());
    for side in [Side::Client, Side::Server] {
        assert_eq!(*pair.conn(side).unwrap().policy(), Policy::PROGRESS_REPORTS, "{side:?}");
    }
}

#[test]
fn an_end_that_heard_the_peer_keeps_offering_past_the_bound_until_one_gets_through() {
    // Both ask; the client's first six offers are lost (a start on a full buffer). Having heard
    // the server, the client knows it is no UDT4 peer and repeats past the bound on unanswered
    // offers: the seventh gets through, and the server reports what the client asked for.
    let lost = usize::from(MAX_UNANSWERED_OFFERS) + 2;
    let (mut pair, seen) = run(config(Policy::PROGRESS_REPORTS), config(Policy::PROGRESS_REPORTS), lost);
    // An offer an answer time apart, with the ACK2s of the data: a second for the rest.
    transfer(&mut pair, 1000);
    let to_server = seen.borrow().iter().filter(|(d, _)| *d == Side::Server).count();
    assert_eq!(to_server, lost + 1, "{:?}", seen.borrow());
    for side in [Side::Client, Side::Server] {
        assert_eq!(*pair.conn(side).unwrap().policy(), Policy::PROGRESS_REPORTS, "{side:?}");
    }
}

#[test]
fn a_receiver_standing_in_for_udt4_ignores_offers_as_udt4_does() {
    // UDT4 4.11 hands every user-defined control packet to its congestion control, whose
    // default ignores it: it never answers, and reports as UDT4 whatever the sender asks.
    let udt4 = Config { udt4_estimators: true, ..config(Policy::UDT4) };
    let asked = Policy::PROGRESS_REPORTS.with_queue_delay_reports(true);
    let (mut pair, seen) = run(config(asked), udt4, 0);
    let server = pair.conn(Side::Server).unwrap();
    assert_eq!(*server.policy(), Policy::UDT4, "the server follows no offer");
    assert!(
        seen.borrow().iter().all(|(dest, _)| *dest == Side::Server),
        "never answered: {:?}",
        seen.borrow()
    );
    assert_eq!(seen.borrow().len(), usize::from(MAX_UNANSWERED_OFFERS), "{:?}", seen.borrow());
}

/// A paced controller that notes what every ACK's context said of the peer.
#[derive(Debug, Default)]
struct Noting(Arc<std::sync::Mutex<Vec<bool>>>);

#[derive(Debug)]
struct NotingCc(FixedRate, Arc<std::sync::Mutex<Vec<bool>>>);

impl CongestionControl for NotingCc {
    fn name(&self) -> &'static str {
        "noting"
    }
    fn on_ack(&mut self, ctx: &mut udt_proto::cc::CcContext<'_>, ack: udt_proto::seq::SeqNo) {
        self.1.lock().unwrap().push(ctx.peer_udt4);
        self.0.on_ack(ctx, ack);
    }
    fn send_period(&self) -> Duration {
        self.0.send_period()
    }
    fn congestion_window(&self) -> f64 {
        self.0.congestion_window()
    }
}

impl CcFactory for Noting {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(NotingCc(FixedRate::new(Duration::from_millis(1), 100_000.0), self.0.clone()))
    }
    fn policy(&self) -> Policy {
        Policy::PROGRESS_REPORTS.with_queue_delay_reports(true)
    }
}

#[test]
fn the_controller_learns_the_peer_is_udt4_once_every_offer_went_unanswered() {
    let noted = Noting::default();
    let seen = noted.0.clone();
    let client = Config { cc: Arc::new(noted), ..Config::default() };
    let udt4 = Config { udt4_estimators: true, ..config(Policy::UDT4) };
    let (mut pair, _) = run(client, udt4, 0);
    // The verdict comes an answer time after the last offer: data still flowing then hears it.
    transfer(&mut pair, 400);
    let seen = seen.lock().unwrap();
    let first = seen.iter().position(|&udt4| udt4).expect("never told the peer is UDT4");
    assert!(first > 0, "told before any offer could be answered");
    assert!(seen[first..].iter().all(|&udt4| udt4), "the verdict is final");
}

#[test]
fn the_controller_is_not_told_the_peer_is_udt4_while_the_last_offer_may_still_be_answered() {
    let noted = Noting::default();
    let seen = noted.0.clone();
    let client = Config { cc: Arc::new(noted), ..Config::default() };
    // Every offer but the last is lost; the last is answered an RTT after it left.
    let (_, offers) = run(client, config(Policy::UDT4), usize::from(MAX_UNANSWERED_OFFERS) - 1);
    let to_server = offers.borrow().iter().filter(|(d, _)| *d == Side::Server).count();
    assert_eq!(to_server, usize::from(MAX_UNANSWERED_OFFERS), "{:?}", offers.borrow());
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty() && seen.iter().all(|&udt4| !udt4), "{seen:?}");
}

#[test]
fn the_controller_of_a_peer_that_answered_is_never_told_it_is_udt4() {
    let noted = Noting::default();
    let seen = noted.0.clone();
    let client = Config { cc: Arc::new(noted), ..Config::default() };
    run(client, config(Policy::UDT4), 0);
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty() && seen.iter().all(|&udt4| !udt4), "{seen:?}");
}
