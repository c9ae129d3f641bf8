//! IPv4 peers of a dual-stack `[::]` listener: the connection is routed and carries data both
//! ways, the application sees the peer as IPv4 (not `::ffff:a.b.c.d`), the listener's handshake
//! tells the peer its address as UDT4's IPv4 form (word 0), connections opened from the
//! listener's port to an IPv4 address work, and IPv6 peers of the same listener work alongside.
//! An IPv4 socket asked to reach an IPv6 peer fails at once. Loopback only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::thread;
use std::time::{Duration, Instant};

use udt::proto::packet::handshake::{RequestType, SocketType};
use udt::proto::packet::{Control, ControlPacket, Handshake, Packet};
use udt::proto::seq::{SeqNo, SocketId};
use udt::{Options, UdtListener, UdtStream};

fn options() -> Options {
    Options {
        read_timeout: Some(Duration::from_secs(30)),
        write_timeout: Some(Duration::from_secs(30)),
        ..Options::default()
    }
}

/// Send `payload` from a client at `to` and echo it back; returns the address the listener
/// saw.
fn echo_through(listener: &UdtListener, to: SocketAddr, payload: &[u8]) -> SocketAddr {
    let sent = payload.to_vec();
    let client = thread::spawn(move || {
        let mut c = UdtStream::connect_with(to, options()).unwrap();
        c.write_all(&sent).unwrap();
        let mut back = vec![0u8; sent.len()];
        c.read_exact(&mut back).unwrap();
        assert!(back == sent, "echo differs");
        (c.local_addr().unwrap(), c.peer_addr().unwrap())
    });
    let (mut s, peer) = listener.accept().unwrap();
    let mut got = vec![0u8; payload.len()];
    s.read_exact(&mut got).unwrap();
    assert!(got == payload, "payload differs");
    s.write_all(&got).unwrap();
    let (client_local, client_peer) = client.join().unwrap();
    assert_eq!(client_peer, to, "the client's view of the listener");
    assert_eq!(peer.port(), client_local.port());
    assert_eq!(s.peer_addr().unwrap(), peer);
    peer
}

#[test]
fn ipv4_and_ipv6_clients_of_a_dual_stack_listener() {
    let listener = UdtListener::bind_with("[::]:0", options()).unwrap();
    let port = listener.local_addr().unwrap().port();
    let payload: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let v4 = echo_through(&listener, SocketAddr::from(([127, 0, 0, 1], port)), &payload);
    assert_eq!(v4.ip(), Ipv4Addr::LOCALHOST, "an IPv4 peer is shown as IPv4");
    let v6 = echo_through(&listener, format!("[::1]:{port}").parse().unwrap(), &payload);
    assert!(v6.is_ipv6() && v6.ip().is_loopback(), "{v6}");
}

#[test]
fn connections_from_a_dual_stack_port_to_an_ipv4_address() {
    let target = UdtListener::bind_with("127.0.0.1:0", options()).unwrap();
    let to = target.local_addr().unwrap();
    let dual = UdtListener::bind_with("[::]:0", options()).unwrap();
    let from_port = dual.local_addr().unwrap().port();
    let mut c = dual.connect(to).unwrap();
    assert_eq!(c.peer_addr().unwrap(), to);
    c.write_all(b"from [::]").unwrap();
    let (mut s, peer) = target.accept().unwrap();
    assert_eq!(peer, SocketAddr::from(([127, 0, 0, 1], from_port)));
    let mut got = [0u8; 9];
    s.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"from [::]");
    s.write_all(b"back").unwrap();
    let mut back = [0u8; 4];
    c.read_exact(&mut back).unwrap();
    assert_eq!(&back, b"back");
}

#[test]
fn an_ipv4_socket_refuses_an_ipv6_peer_at_once() {
    let v4 = UdtListener::bind_with("127.0.0.1:0", options()).unwrap();
    let t = Instant::now();
    let e = v4.connect("[::1]:9").expect_err("an IPv4 socket cannot reach ::1");
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(t.elapsed() < Duration::from_secs(2), "refused only after {:?}", t.elapsed());
}

fn emit(hs: Handshake) -> Vec<u8> {
    let packet = ControlPacket { timestamp: 0, dst: SocketId(0), body: Control::Handshake(hs) };
    let mut buf = [0u8; 128];
    let n = packet.emit(&mut buf).unwrap();
    buf[..n].to_vec()
}

fn receive_handshake(socket: &UdpSocket) -> Handshake {
    let mut buf = [0u8; 2048];
    loop {
        let (n, _) = socket.recv_from(&mut buf).expect("an answer from the listener");
        if let Ok(Packet::Control(ControlPacket { body: Control::Handshake(hs), .. })) =
            Packet::parse(&buf[..n])
        {
            return hs;
        }
    }
}

/// A UDT4 IPv4 client reads its own address from word 0 of the handshake's peer-IP field: a
/// dual-stack listener must write it there, not as IPv4-mapped IPv6.
#[test]
fn the_handshake_tells_an_ipv4_peer_its_address_as_ipv4() {
    let listener = UdtListener::bind_with("[::]:0", options()).unwrap();
    let to = SocketAddr::from(([127, 0, 0, 1], listener.local_addr().unwrap().port()));
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut hs = Handshake {
        version: 4,
        socket_type: SocketType::Stream,
        initial_seq: SeqNo::new(12_345),
        mss: 1500,
        flow_window: 8192,
        request_type: RequestType::Request,
        socket_id: SocketId(77),
        cookie: 0,
        peer_ip: Handshake::encode_peer_ip(Ipv4Addr::LOCALHOST.into()),
    };
    socket.send_to(&emit(hs), to).unwrap();
    let reply = receive_handshake(&socket);
    assert_eq!(reply.request_type, RequestType::Request, "the cookie reply");
    hs.request_type = RequestType::Response;
    hs.cookie = reply.cookie;
    socket.send_to(&emit(hs), to).unwrap();
    let answer = receive_handshake(&socket);
    assert_eq!(answer.request_type, RequestType::Response, "the listener's final answer");
    assert_eq!(answer.peer_ip, [0x0100_007f, 0, 0, 0], "127.0.0.1 in UDT4's IPv4 form");
    assert_eq!(answer.peer_ipv4(), Ipv4Addr::LOCALHOST);
    let (_, peer) = listener.accept().unwrap();
    assert_eq!(peer, socket.local_addr().unwrap());
}
