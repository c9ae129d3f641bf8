//! A flood of first handshake requests costs the listener nothing: each gets a SYN-cookie reply
//! computed from the request alone and leaves no state (no route, no connection), and a
//! response with a forged cookie is dropped; state is created only by a cookie that checks out.

// Test code: helpers outside #[test] functions may panic on failure too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::net::SocketAddr;

use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use support::handshake_request;
use udt_proto::connection::Config;
use udt_proto::endpoint::{DatagramEvent, Endpoint};
use udt_proto::packet::{Control, ControlPacket, Packet, RequestType};
use udt_proto::Instant;

#[test]
fn first_requests_and_forged_cookies_leave_no_state() {
    let now = Instant::from_micros(1_000_000);
    let mut ep = Endpoint::new(now, Box::new(Xoshiro256PlusPlus::seed_from_u64(7)));
    ep.listen(Config::default()).unwrap();
    let mut out = [0u8; 128];
    let mut cookies = Vec::new();
    for i in 0..100_000u32 {
        let from =
            SocketAddr::from(([10, (i >> 16) as u8, (i >> 8) as u8, i as u8], 1000 + (i % 50_000) as u16));
        let DatagramEvent::Respond(n) =
            ep.handle_datagram(now, from, &handshake_request(i + 1, 0, RequestType::Request), &mut out)
        else {
            panic!("request {i}: no cookie reply")
        };
        let Ok(Packet::Control(ControlPacket { body: Control::Handshake(reply), .. })) =
            Packet::parse(&out[..n])
        else {
            panic!("request {i}: the reply does not parse")
        };
        cookies.push((from, reply.cookie));
    }
    assert_eq!(ep.connection_count(), 0, "first requests created state");
    assert_eq!(ep.stats().cookie_replies, 100_000);
    // Forged cookies (each off by one) admit nothing.
    for (i, &(from, cookie)) in cookies.iter().enumerate().take(1000) {
        let forged = handshake_request(i as u32 + 1, cookie.wrapping_add(1).max(1), RequestType::Response);
        assert!(matches!(ep.handle_datagram(now, from, &forged, &mut out), DatagramEvent::Dropped));
    }
    assert_eq!(ep.connection_count(), 0);
    assert_eq!(ep.stats().bad_cookies, 1000);
    // The real cookie does.
    let (from, cookie) = cookies[0];
    let event = ep.handle_datagram(now, from, &handshake_request(1, cookie, RequestType::Response), &mut out);
    assert!(matches!(event, DatagramEvent::Accepted(_)));
    assert_eq!(ep.connection_count(), 1);
}
