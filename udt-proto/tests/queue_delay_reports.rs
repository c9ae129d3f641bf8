//! The receiver's queueing-delay reports measure each data packet's one-way delay to the time
//! it reached the host (`handle_datagram_received`), not to when the driver got to it: a read
//! backlog that comes and goes at the receiver is no queue on the path.

// Test code: helpers outside #[test] functions may panic on failure too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::{LinkModel, Pair, Side};
use udt_proto::cc::{CcContext, CcFactory, CongestionControl, FixedRate, Policy};
use udt_proto::connection::Config;
use udt_proto::seq::SeqNo;
use udt_proto::Instant;

/// Standing queueing delays reported to the sender, in order.
type Reports = Arc<Mutex<Vec<Duration>>>;

/// A paced controller (1 packet per ms) that asks for queue reports and keeps them.
#[derive(Debug)]
struct Keeping(FixedRate, Reports);

impl CongestionControl for Keeping {
    fn name(&self) -> &'static str {
        "keeping"
    }
    fn on_ack(&mut self, ctx: &mut CcContext<'_>, ack: SeqNo) {
        if let Some(q) = ctx.ack.and_then(|a| a.queue) {
            self.1.lock().unwrap().push(q.min);
        }
        self.0.on_ack(ctx, ack);
    }
    fn send_period(&self) -> Duration {
        self.0.send_period()
    }
    fn congestion_window(&self) -> f64 {
        self.0.congestion_window()
    }
}

#[derive(Debug, Default)]
struct KeepingFactory(Reports);

impl CcFactory for KeepingFactory {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(Keeping(FixedRate::new(Duration::from_millis(1), 100_000.0), self.0.clone()))
    }
    fn policy(&self) -> Policy {
        Policy::PROGRESS_REPORTS.with_queue_delay_reports(true)
    }
}

/// From 2.5 s on, the server reads every datagram 3 ms after it reached the host (a read
/// backlog that builds once the flow is running): the link to it then takes 3 ms longer to
/// hand a datagram over, and the datagrams sent from then on (the first arrive after 2.5115 s)
/// reached the host 3 ms before they are handled.
fn backlog(now: Instant) -> Duration {
    if now < Instant::from_micros(2_511_500) {
        Duration::ZERO
    } else {
        Duration::from_millis(3)
    }
}

#[test]
fn a_read_backlog_at_the_receiver_is_no_queue() {
    let reports = Reports::default();
    let client = Config { cc: Arc::new(KeepingFactory(reports.clone())), ..Config::default() };
    let link = LinkModel { delay: Duration::from_millis(10), ..LinkModel::default() };
    let mut pair = Pair::new(7, link, link, client.clone());
    pair.server_read_lag = Some(backlog);
    pair.connect(client);
    assert!(pair.run_until(Duration::from_secs(5), |p| p.connected()));
    // The flow sends a packet per millisecond, and the server's application keeps up.
    let data = vec![7u8; 4_000 * 1_400];
    let (mut written, mut read) = (0, 0);
    let mut chunk = vec![0u8; 64 * 1024];
    let mut flow = |p: &mut Pair| {
        let client = p.client.as_mut().unwrap();
        while let Ok(n @ 1..) = client.write(&data[written..]) {
            written += n;
        }
        let server = p.server.as_mut().unwrap();
        while let Ok(n @ 1..) = server.read(&mut chunk) {
            read += n;
        }
        false
    };
    pair.run_until(Instant::from_micros(2_500_000) - pair.now, &mut flow);
    pair.link_model_mut(Side::Server).delay += Duration::from_millis(3);
    pair.run_until(Duration::from_secs(2), &mut flow);
    assert!(pair.now > Instant::from_micros(4_000_000), "ran past the backlog's start");
    assert!(read > 2_000 * 1_400, "{read} bytes arrived");
    let reports = reports.lock().unwrap();
    assert!(reports.len() > 100, "{} reports", reports.len());
    let worst = reports.iter().max().unwrap();
    assert!(*worst < Duration::from_micros(500), "a standing queue of {worst:?} reported");
}
