//! FOBS' setup as sans-IO sessions ([`udt_bulk::fobs::setup`]): a whole transfer, request,
//! accept and channel 1 included, in virtual time over the pair harness; refusals, the vetting
//! of channel 1 and the setup deadlines, by `now` alone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use udt_bulk::fobs::setup::{Opener, SetupError, SetupState};
use udt_bulk::fobs::wire::{self, Message};
use udt_bulk::fobs::{AckScheme, Client, Params, Server};
use udt_bulk::pair::{run_pair, Path};
use udt_bulk::storage::Memory;
use udt_bulk::{Event, Instant, Session};

const TOKEN: u64 = 0x5eed_f0b5;

fn params(scheme: AckScheme) -> Params {
    Params { ack_scheme: scheme, setup_timeout: Duration::from_secs(3), ..Params::default() }
}

fn serving(data: Vec<u8>) -> Opener<'static, Memory> {
    Box::new(move |name| match name {
        "f" => Ok(Memory(data.clone())),
        _ => Err(format!("{name}: no such file")),
    })
}

fn at(ms: u64) -> Instant {
    Instant::from_nanos(ms * 1_000_000)
}

#[test]
fn a_whole_transfer_runs_setup_included_over_a_lossy_path() {
    let data: Vec<u8> = (0..400_000u32).map(|i| (i * 31 % 251) as u8).collect();
    let path =
        Path { one_way: Duration::from_millis(20), loss: 0.02, reorder: 0.01, seed: 5, ..Path::default() };
    for scheme in [AckScheme::SegmentedTcp, AckScheme::ChunkMapUdp] {
        let p = params(scheme);
        let mut server = Server::new(Instant::ZERO, &p, TOKEN, 9000, serving(data.clone())).unwrap();
        let mut client = Client::new(Instant::ZERO, &p, "f", 9001, Memory::default()).unwrap();
        let out = run_pair(&mut server, &mut client, &path, Duration::from_secs(60));
        assert_eq!((out.a.clone(), out.b.clone()), (Some(Ok(())), Some(Ok(()))), "{scheme:?}: {out:?}");
        assert!(client.session().unwrap().sink().0 == data, "{scheme:?}: byte for byte");
        assert_eq!(client.peer_digest(), Some(*blake3::hash(&data).as_bytes()));
        assert_eq!(
            (server.name(), server.data_port(), client.data_port()),
            (Some("f"), Some(9001), Some(9000))
        );
        // Request, accept and hello take one and a half round trips before the first datagram.
        assert!(out.elapsed > Duration::from_millis(60), "{:?}", out.elapsed);
    }
}

#[test]
fn a_refusal_reaches_the_receiver_with_its_reason() {
    let p = params(AckScheme::SegmentedTcp);
    let mut server = Server::new(Instant::ZERO, &p, TOKEN, 9000, serving(vec![1; 10])).unwrap();
    let mut client = Client::new(Instant::ZERO, &p, "missing", 9001, Memory::default()).unwrap();
    let (channel, request) = client.poll_control().unwrap();
    assert_eq!(channel, 0);
    // Split anywhere: byte by byte.
    for b in &request {
        server.handle_control(at(1), 0, std::slice::from_ref(b));
    }
    let (_, answer) = server.poll_control().unwrap();
    assert_eq!(server.poll_event(), Some(Event::Failed("refused: missing: no such file".into())));
    assert_eq!(server.setup_state(), SetupState::Failed(SetupError::Refused("missing: no such file".into())));
    client.handle_control(at(2), 0, &answer);
    assert_eq!(client.poll_event(), Some(Event::Failed("refused: missing: no such file".into())));
    assert!(client.poll_control().is_none(), "no hello after a refusal");
    let mut buf = vec![0u8; 2048];
    assert_eq!(server.poll_datagram(at(3), &mut buf), None);
}

#[test]
fn only_the_token_from_the_receivers_host_joins_channel_1() {
    let p = params(AckScheme::SegmentedTcp);
    let mut server = Server::new(Instant::ZERO, &p, TOKEN, 9000, serving(vec![7; 5000])).unwrap();
    let hello = |token| Message::Hello { token }.encode();
    assert!(server.vet_hello(&hello(TOKEN), true).unwrap_err().contains("no transfer is waiting"));
    let mut client = Client::new(Instant::ZERO, &p, "f", 9001, Memory::default()).unwrap();
    let (_, request) = client.poll_control().unwrap();
    server.handle_control(at(1), 0, &request);
    assert_eq!(server.setup_state(), SetupState::AwaitingHello);
    let (_, accept) = server.poll_control().unwrap();
    let mut buf = vec![0u8; 2048];
    assert_eq!(server.poll_datagram(at(2), &mut buf), None, "nothing sent before channel 1");

    assert_eq!(server.vet_hello(&hello(TOKEN ^ 1), true), Err("unknown session token".into()));
    assert_eq!(server.vet_hello(&hello(TOKEN), false), Err("unknown session token".into()));
    assert!(server.vet_hello(&request, true).unwrap_err().starts_with("busy"));
    assert!(server.vet_hello(b"GET / HTTP/1.0\r\n", true).unwrap_err().contains("not a FOBS peer"));
    client.handle_control(at(2), 0, &accept);
    let (channel, joined) = client.poll_control().unwrap();
    assert_eq!((channel, joined.clone()), (1, hello(TOKEN)));
    assert_eq!(server.vet_hello(&joined, true), Ok(()));
    server.handle_control(at(3), 1, &joined);
    assert_eq!(server.setup_state(), SetupState::Running);
    let len = server.poll_datagram(at(3), &mut buf).expect("the transfer starts");
    assert!(len > wire::DATA_HEADER);
}

#[test]
fn each_setup_step_has_its_deadline() {
    let p = params(AckScheme::SegmentedTcp);
    let mut server = Server::new(at(100), &p, TOKEN, 9000, serving(vec![7; 5000])).unwrap();
    assert_eq!(server.poll_timeout(), Some(at(3_100)));
    server.handle_timeout(at(3_099));
    assert_eq!(server.setup_state(), SetupState::Pending);
    server.handle_timeout(at(3_100));
    assert!(
        matches!(server.setup_state(), SetupState::Failed(SetupError::TimedOut(why)) if why.contains("no request"))
    );

    // Accepted at 1 s: channel 1 is due by 4 s.
    let mut server = Server::new(Instant::ZERO, &p, TOKEN, 9000, serving(vec![7; 5000])).unwrap();
    let mut client = Client::new(Instant::ZERO, &p, "f", 9001, Memory::default()).unwrap();
    server.handle_control(at(1_000), 0, &client.poll_control().unwrap().1);
    assert_eq!(server.poll_timeout(), Some(at(4_000)));
    server.handle_timeout(at(4_000));
    assert!(matches!(server.poll_event(), Some(Event::DataPeerPort(9001))));
    assert!(matches!(server.poll_event(), Some(Event::Failed(why)) if why.contains("control channel 1")));

    assert_eq!(client.poll_timeout(), Some(at(3_000)));
    client.handle_timeout(at(3_000));
    assert!(matches!(client.setup_state(), SetupState::Failed(SetupError::TimedOut(_))));
}

#[test]
fn a_closed_or_confused_peer_fails_the_setup() {
    let p = params(AckScheme::SegmentedTcp);
    let mut client = Client::new(Instant::ZERO, &p, "f", 9001, Memory::default()).unwrap();
    client.handle_control_closed(at(1), 0);
    assert!(
        matches!(client.setup_state(), SetupState::Failed(SetupError::Protocol(why)) if why.contains("closed"))
    );

    let mut server = Server::new(Instant::ZERO, &p, TOKEN, 9000, serving(vec![])).unwrap();
    server.handle_control(at(1), 0, &Message::Hello { token: TOKEN }.encode());
    assert!(
        matches!(server.setup_state(), SetupState::Failed(SetupError::Protocol(why)) if why.contains("expected a request"))
    );

    let other = Params { ack_scheme: AckScheme::ChunkMapUdp, ..p.clone() };
    let mut server = Server::new(Instant::ZERO, &other, TOKEN, 9000, serving(vec![1; 10])).unwrap();
    let mut client = Client::new(Instant::ZERO, &p, "f", 9001, Memory::default()).unwrap();
    let (_, request) = client.poll_control().unwrap();
    server.handle_control(at(1), 0, &request);
    client.handle_control(at(2), 0, &server.poll_control().unwrap().1);
    assert_eq!(client.setup_state(), SetupState::Running, "the request's scheme rules");

    assert!(Client::new(Instant::ZERO, &p, &"x".repeat(wire::MAX_NAME + 1), 1, Memory::default()).is_err());
}
