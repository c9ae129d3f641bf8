//! `Config::peer_idle_timeout` in virtual time: a peer that goes silent is declared lost
//! exactly when nothing has been heard from it for the timeout, not before and regardless of the
//! EXP count, with or without data in flight; a live idle peer's keep-alives keep the connection
//! up far past the timeout, on short and long paths; without the option UDT4's rule is unchanged.
//! Run with the default controller, which the runtime uses (here rather than in udt-proto).

// Test code: helpers outside #[test] functions may panic on failure too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../udt-proto/tests/support/mod.rs"]
mod support;

use std::time::Duration;

use support::{test_data, LinkModel, Pair, Side};
use udt_proto::connection::{CloseReason, Config, ConfigError, Event, State};
use udt_proto::Instant;

const TIMEOUT: Duration = Duration::from_secs(5);

/// The runtime's default controller (the model), whose connections these timers serve.
fn config(timeout: Option<Duration>) -> Config {
    Config { peer_idle_timeout: timeout, cc: udt_cc::default_factory(), ..Config::default() }
}

fn connected_pair(seed: u64, link: LinkModel, config: Config) -> Pair {
    let mut pair = Pair::new(seed, link, link, config.clone());
    pair.connect(config);
    assert!(pair.run_until(Duration::from_secs(10), |p| p.connected()), "seed {seed}: not connected");
    pair
}

fn client_lost(p: &Pair) -> bool {
    p.client_events.contains(&Event::Closed(CloseReason::ConnectionLost))
}

/// Step `pair` for at most `limit` of virtual time or until `stop`; returns the instants at
/// which datagrams reached the client.
fn arrivals_at_client(pair: &mut Pair, limit: Duration, stop: impl Fn(&Pair) -> bool) -> Vec<Instant> {
    let end = pair.now + limit;
    let mut arrivals = Vec::new();
    let mut delivered = pair.link_stats(Side::Client).delivered;
    while pair.now <= end && !stop(pair) {
        if !pair.step() {
            break;
        }
        let now_delivered = pair.link_stats(Side::Client).delivered;
        if now_delivered > delivered {
            arrivals.push(pair.now);
            delivered = now_delivered;
        }
    }
    arrivals
}

/// Run `pair` for `before`, then silence the server (nothing reaches the client any more, and
/// the server hears nothing either); returns (last arrival at the client, when the client
/// declared the connection lost).
fn silence_server(pair: &mut Pair, before: Duration) -> (Instant, Instant) {
    let mut arrivals = arrivals_at_client(pair, before, |_| false);
    pair.link_model_mut(Side::Server).blackhole = true;
    pair.link_model_mut(Side::Client).blackhole = true;
    arrivals.extend(arrivals_at_client(pair, Duration::from_secs(120), client_lost));
    assert!(client_lost(pair), "the client never declared the connection lost");
    (*arrivals.last().expect("the server was heard from"), pair.now)
}

#[test]
fn an_idle_connection_is_lost_exactly_at_the_timeout_after_the_peer_goes_silent() {
    let mut pair = connected_pair(71, LinkModel::default(), config(Some(TIMEOUT)));
    // Idle for a while first: keep-alives only.
    let (last, lost) = silence_server(&mut pair, Duration::from_secs(3));
    assert_eq!(lost - last, TIMEOUT, "declared lost {:?} after the last packet heard", lost - last);
    let client = pair.client.as_ref().unwrap();
    assert_eq!(client.state(), State::Closed(CloseReason::ConnectionLost));
}

#[test]
fn a_sender_with_data_in_flight_is_told_at_the_timeout_not_after_the_exp_count() {
    let mut pair = connected_pair(72, LinkModel::default(), config(Some(TIMEOUT)));
    pair.client.as_mut().unwrap().write(&test_data(10_000_000, 1)).unwrap();
    let (last, lost) = silence_server(&mut pair, Duration::from_millis(50));
    // Only a few EXP expiries fit in 5 s (300 ms, 600 ms, ...): UDT4's rule alone needs 16.
    assert_eq!(lost - last, TIMEOUT, "declared lost {:?} after the last packet heard", lost - last);
    let err = pair.client.as_mut().unwrap().write(b"x").unwrap_err();
    assert_eq!(err, udt_proto::connection::ConnError::Closed(CloseReason::ConnectionLost));
}

#[test]
fn without_the_option_the_udt4_rule_still_takes_tens_of_seconds() {
    let mut pair = connected_pair(73, LinkModel::default(), config(None));
    let (last, lost) = silence_server(&mut pair, Duration::from_secs(3));
    assert!(lost - last > Duration::from_secs(30), "declared lost {:?} after the last packet", lost - last);
}

#[test]
fn keep_alives_from_a_live_idle_peer_keep_it_up_past_the_timeout() {
    for (seed, delay) in [(74, Duration::from_millis(5)), (75, Duration::from_millis(300))] {
        let link = LinkModel { delay, ..LinkModel::default() };
        let mut pair = connected_pair(seed, link, config(Some(TIMEOUT)));
        // A little data first, so that the RTT estimate is the path's.
        pair.client.as_mut().unwrap().write(&test_data(100_000, 2)).unwrap();
        let start = pair.now;
        let arrivals = arrivals_at_client(&mut pair, Duration::from_secs(60), |_| false);
        assert!(pair.connected(), "delay {delay:?}: an idle connection with a live peer was dropped");
        assert!(!client_lost(&pair));
        // What kept it up: packets from the server all along, keep-alives once the data was
        // through, never TIMEOUT apart.
        let gaps = arrivals.windows(2).map(|w| w[1] - w[0]);
        let longest = gaps.max().unwrap();
        assert!(longest < TIMEOUT / 2, "delay {delay:?}: {longest:?} without a packet from the live peer");
        assert!(*arrivals.last().unwrap() - start > Duration::from_secs(55));
        eprintln!("one-way delay {delay:?}: longest silence of a live idle peer {longest:?}");
    }
}

#[test]
fn a_zero_timeout_is_refused() {
    assert_eq!(config(Some(Duration::ZERO)).validate(), Err(ConfigError::ZeroPeerIdleTimeout));
    assert_eq!(config(Some(TIMEOUT)).validate(), Ok(()));
}
