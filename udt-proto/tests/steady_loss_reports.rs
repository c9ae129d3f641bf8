//! Loss reports on a link with errors (`Policy::steady_loss_reports`, `one_resend_per_rtt`):
//! the receiver reports an unrepaired loss again every re-report interval instead of after a
//! growing one, and the sender never resends a packet on a report written before its last
//! retransmission could arrive, so the repeats cost no duplicate.

// Test code: helpers outside #[test] functions may panic on failure too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use support::{test_data, LinkModel, Pair, Side};
use udt_proto::cc::{CcFactory, CongestionControl, FixedRate, Policy};
use udt_proto::connection::Config;
use udt_proto::packet::{Control, Packet};
use udt_proto::SeqNo;

/// 1 ms per packet, a window far larger than the flight; `.0`: steady reports asked for.
#[derive(Debug)]
struct Paced(bool);

impl CcFactory for Paced {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(FixedRate::new(Duration::from_millis(1), 100_000.0))
    }
    fn policy(&self) -> Policy {
        Policy::UDT4.with_steady_loss_reports(self.0)
    }
}

const ISN: u32 = 5000;
const WATCHED: u32 = ISN + 500;

fn config(steady: bool) -> Config {
    Config { cc: Arc::new(Paced(steady)), initial_seq: Some(SeqNo::new(ISN)), ..Config::default() }
}

/// 50 ms each way: RTT 100 ms.
fn link() -> LinkModel {
    LinkModel { delay: Duration::from_millis(50), ..LinkModel::default() }
}

/// What one transfer showed.
struct Run {
    /// When the watched packet arrived, after the receiver first reported it lost.
    repair: Duration,
    /// The client's retransmissions.
    retransmits: u64,
}

/// 1000 packets client to server at 1 ms each; the first `drops` transmissions of packet
/// `WATCHED` are lost; with `echo`, every NAK reaches the client twice, the copy 50 ms after
/// the original (a report repeated within the round trip of the retransmission it caused).
fn run(steady: bool, drops: u32, echo: bool) -> Run {
    let mut pair = Pair::new(7, link(), link(), config(steady));
    pair.connect(config(steady));
    assert!(pair.run_until(Duration::from_secs(5), |p| p.connected()));
    let mut left: HashMap<u32, u32> = HashMap::from([(WATCHED, drops)]);
    let arrived = Rc::new(RefCell::new(None));
    let naks: Rc<RefCell<Vec<Vec<u8>>>> = Rc::default();
    let (seen_arrival, seen_naks) = (arrived.clone(), naks.clone());
    let mut echoed = HashSet::new();
    pair.filter = Some(Box::new(move |dest, bytes| {
        match (dest, Packet::parse(bytes)) {
            (Side::Server, Ok(Packet::Data(h, _))) if h.seq.value() == WATCHED => {
                if let Some(n) = left.get_mut(&WATCHED).filter(|n| **n > 0) {
                    *n -= 1;
                    return false;
                }
                seen_arrival.borrow_mut().get_or_insert(());
            }
            (Side::Client, Ok(Packet::Control(c)))
                if echo && matches!(c.body, Control::Nak(_)) && echoed.insert(bytes.to_vec()) =>
            {
                seen_naks.borrow_mut().push(bytes.to_vec());
            }
            _ => {}
        }
        true
    }));
    let data = test_data(1000 * 1400, 3);
    let (mut written, mut got) = (0, 0);
    let mut buf = vec![0u8; 1 << 20];
    let (mut first_nak, mut repaired) = (None, None);
    pair.run_until(Duration::from_secs(30), |p| {
        for copy in naks.borrow_mut().drain(..) {
            p.send(Side::Client, copy);
        }
        let client = p.client.as_mut().unwrap();
        if written < data.len() {
            written += client.write(&data[written..]).unwrap_or(0);
        }
        let server = p.server.as_mut().unwrap();
        if first_nak.is_none() && server.counters().naks_sent > 0 {
            first_nak = Some(p.now);
        }
        if repaired.is_none() && arrived.borrow().is_some() {
            repaired = Some(p.now);
        }
        while let Ok(n) = server.read(&mut buf) {
            if n == 0 {
                break;
            }
            got += n;
        }
        got >= data.len()
    });
    assert_eq!(got, data.len(), "the transfer completes");
    Run {
        repair: repaired.unwrap() - first_nak.unwrap(),
        retransmits: pair.client.as_ref().unwrap().counters().retransmits,
    }
}

#[test]
fn a_report_repeated_within_the_round_trip_of_its_retransmission_is_not_answered_again() {
    let once = run(true, 1, true);
    assert_eq!(once.retransmits, 1, "the echoed report arrives 50 ms after the retransmission left");
    let udt4 = run(false, 1, true);
    assert_eq!(udt4.retransmits, 2, "UDT4's sender answers every report");
}

#[test]
fn steady_reports_repair_a_repeatedly_lost_retransmission_sooner() {
    // Lost four times: the receiver's 2nd, 3rd and 4th reports come one re-report interval
    // (RTT + 4 RTTVar + SYN, about 110 ms here) apart, not 1, 2 and 3 intervals apart.
    let steady = run(true, 4, false);
    let growing = run(false, 4, false);
    assert_eq!(steady.retransmits, 4, "one retransmission per report, none duplicated");
    let interval = Duration::from_millis(110);
    assert!(
        steady.repair + interval * 2 <= growing.repair,
        "steady {:?}, growing {:?}",
        steady.repair,
        growing.repair
    );
    assert!(steady.repair < interval * 4 + Duration::from_millis(150), "steady {:?}", steady.repair);
}
