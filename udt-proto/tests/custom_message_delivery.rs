//! User-defined control messages (type 0x7FFF, thesis §5.1.2 `sendCustomMsg`) reach the peer's
//! `on_custom_message` intact: sub-type, info word and body bytes, whatever the body length.

// Test code: a panic is the right failure here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::{LinkModel, Pair};
use udt_proto::cc::{CcContext, CcFactory, CongestionControl, CustomMessage};
use udt_proto::connection::Config;

/// Sends `outgoing` at `init`, records what arrives.
#[derive(Debug)]
struct Probe {
    outgoing: VecDeque<CustomMessage>,
    log: Arc<Mutex<Vec<CustomMessage>>>,
}

impl CongestionControl for Probe {
    fn name(&self) -> &'static str {
        "probe"
    }
    fn init(&mut self, _ctx: &mut CcContext<'_>) {}
    fn on_custom_message(&mut self, _ctx: &mut CcContext<'_>, msg: &CustomMessage) {
        self.log.lock().unwrap().push(msg.clone());
    }
    fn send_period(&self) -> Duration {
        Duration::from_micros(10)
    }
    fn congestion_window(&self) -> f64 {
        1000.0
    }
    fn poll_custom_message(&mut self) -> Option<CustomMessage> {
        self.outgoing.pop_front()
    }
}

#[derive(Debug)]
struct ProbeFactory {
    outgoing: Vec<CustomMessage>,
    log: Arc<Mutex<Vec<CustomMessage>>>,
}

impl CcFactory for ProbeFactory {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(Probe { outgoing: self.outgoing.clone().into(), log: Arc::clone(&self.log) })
    }
}

#[test]
fn custom_messages_arrive_intact_both_ways() {
    let body = |len: usize| (0..len).map(|i| (i * 7 + 3) as u8).collect::<Vec<u8>>();
    let to_server = vec![
        CustomMessage { subtype: 0x4754, info: 0xDEAD_BEEF, data: body(12) },
        CustomMessage { subtype: 0xFFFF, info: 0, data: vec![] },
        CustomMessage { subtype: 1, info: 7, data: body(13) }, // not a multiple of 4
        CustomMessage { subtype: 2, info: u32::MAX, data: body(1000) },
    ];
    let to_client = vec![CustomMessage { subtype: 3, info: 42, data: body(5) }];
    let server_log = Arc::new(Mutex::new(Vec::new()));
    let client_log = Arc::new(Mutex::new(Vec::new()));
    let server_cc = ProbeFactory { outgoing: to_client.clone(), log: Arc::clone(&server_log) };
    let client_cc = ProbeFactory { outgoing: to_server.clone(), log: Arc::clone(&client_log) };
    let server_config = Config { cc: Arc::new(server_cc), ..Config::default() };
    let mut pair = Pair::new(17, LinkModel::default(), LinkModel::default(), server_config);
    pair.connect(Config { cc: Arc::new(client_cc), ..Config::default() });
    assert!(pair.run_until(Duration::from_secs(5), |p| p.connected()));
    let done = pair.run_until(Duration::from_secs(1), |_| {
        server_log.lock().unwrap().len() == to_server.len() && client_log.lock().unwrap().len() == 1
    });
    assert!(done, "server got {:?}", server_log.lock().unwrap());
    assert_eq!(*server_log.lock().unwrap(), to_server);
    assert_eq!(*client_log.lock().unwrap(), to_client);
}
