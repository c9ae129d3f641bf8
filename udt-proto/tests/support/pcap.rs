//! A small classic-pcap reader (IPv4 + UDP only) for the golden vectors of the reference UDT4
//! (`testdata/vectors`): Ethernet, VLAN, SLL, SLL2, loopback and raw link types.

use std::fs;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;

/// The repository's copy of the vectors.
pub fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("testdata").join("vectors")
}

// ---------------------------------------------------------------------------------------------
// A small classic-pcap reader (IPv4 + UDP only).
// ---------------------------------------------------------------------------------------------

/// One UDP datagram of a capture.
pub struct Datagram {
    /// 1-based frame number within the capture.
    pub number: usize,
    /// Capture time in microseconds.
    pub time_us: u64,
    pub src: SocketAddrV4,
    pub dst: SocketAddrV4,
    /// UDP length field (header + payload).
    pub udp_len: usize,
    pub payload: Vec<u8>,
}

const LINKTYPE_NULL: u32 = 0;
pub const LINKTYPE_ETHERNET: u32 = 1;
const LINKTYPE_RAW_OLD: u32 = 12;
const LINKTYPE_RAW_OPENBSD: u32 = 14;
const LINKTYPE_RAW: u32 = 101;
const LINKTYPE_LOOP: u32 = 108;
const LINKTYPE_LINUX_SLL: u32 = 113;
const LINKTYPE_IPV4: u32 = 228;
const LINKTYPE_LINUX_SLL2: u32 = 276;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_VLAN: u16 = 0x8100;

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Read a classic pcap file; panics (failing the test) on anything that is not IPv4/UDP.
pub fn read_pcap(path: &PathBuf) -> (u32, Vec<Datagram>) {
    let data = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(data.len() >= 24, "{}: no pcap header", path.display());
    // Magic in file order tells byte order and timestamp resolution.
    let (little, nanos) = match [data[0], data[1], data[2], data[3]] {
        [0xd4, 0xc3, 0xb2, 0xa1] => (true, false),
        [0xa1, 0xb2, 0xc3, 0xd4] => (false, false),
        [0x4d, 0x3c, 0xb2, 0xa1] => (true, true),
        [0xa1, 0xb2, 0x3c, 0x4d] => (false, true),
        m => panic!("{}: not a classic pcap file (magic {m:02x?}); pcapng is not supported", path.display()),
    };
    let rd32 = |at: usize| {
        let b = [data[at], data[at + 1], data[at + 2], data[at + 3]];
        if little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    let major = if little { u16::from_le_bytes([data[4], data[5]]) } else { be16(&data, 4) };
    assert_eq!(major, 2, "{}: pcap major version", path.display());
    // The upper bits of the link-type field may carry FCS information.
    let linktype = rd32(20) & 0x0FFF_FFFF;

    let mut out = Vec::new();
    let mut off = 24;
    let mut number = 0;
    while off < data.len() {
        number += 1;
        let ctx = format!("{} frame {number}", path.display());
        assert!(off + 16 <= data.len(), "{ctx}: truncated record header");
        let (sec, frac, incl, orig) =
            (rd32(off) as u64, rd32(off + 4) as u64, rd32(off + 8) as usize, rd32(off + 12) as usize);
        off += 16;
        assert!(off + incl <= data.len(), "{ctx}: truncated record");
        assert_eq!(incl, orig, "{ctx}: frame cut by the capture snap length");
        let frame = &data[off..off + incl];
        off += incl;
        let time_us = sec * 1_000_000 + if nanos { frac / 1000 } else { frac };

        let ip: &[u8] = match linktype {
            LINKTYPE_ETHERNET => {
                assert!(frame.len() >= 14, "{ctx}: short Ethernet frame");
                let mut et_at = 12;
                while be16(frame, et_at) == ETHERTYPE_VLAN {
                    et_at += 4;
                    assert!(frame.len() >= et_at + 2, "{ctx}: short VLAN frame");
                }
                assert_eq!(be16(frame, et_at), ETHERTYPE_IPV4, "{ctx}: not IPv4");
                &frame[et_at + 2..]
            }
            LINKTYPE_LINUX_SLL => {
                assert!(frame.len() >= 16, "{ctx}: short SLL frame");
                assert_eq!(be16(frame, 14), ETHERTYPE_IPV4, "{ctx}: not IPv4");
                &frame[16..]
            }
            LINKTYPE_LINUX_SLL2 => {
                assert!(frame.len() >= 20, "{ctx}: short SLL2 frame");
                assert_eq!(be16(frame, 0), ETHERTYPE_IPV4, "{ctx}: not IPv4");
                &frame[20..]
            }
            LINKTYPE_NULL | LINKTYPE_LOOP => {
                // A 4-byte address family: host order for NULL, network order for LOOP.
                assert!(frame.len() >= 4, "{ctx}: short loopback frame");
                let fam = [frame[0], frame[1], frame[2], frame[3]];
                assert!(u32::from_le_bytes(fam) == 2 || u32::from_be_bytes(fam) == 2, "{ctx}: not AF_INET");
                &frame[4..]
            }
            LINKTYPE_RAW | LINKTYPE_RAW_OLD | LINKTYPE_RAW_OPENBSD | LINKTYPE_IPV4 => frame,
            other => panic!("{}: unsupported link type {other}", path.display()),
        };

        // IPv4 (RFC 791).
        assert!(ip.len() >= 20, "{ctx}: short IP header");
        assert_eq!(ip[0] >> 4, 4, "{ctx}: not IPv4");
        let ihl = usize::from(ip[0] & 0x0F) * 4;
        let total = usize::from(be16(ip, 2));
        assert!(ihl >= 20 && total >= ihl && total <= ip.len(), "{ctx}: bad IP lengths");
        assert_eq!(be16(ip, 6) & 0x3FFF, 0, "{ctx}: fragmented datagram");
        assert_eq!(ip[9], 17, "{ctx}: not UDP");
        let sum = ip[..ihl].chunks(2).map(|c| u32::from(be16(c, 0))).sum::<u32>();
        let sum = (sum & 0xFFFF) + (sum >> 16);
        assert_eq!((sum & 0xFFFF) + (sum >> 16), 0xFFFF, "{ctx}: IP header checksum");
        let src_ip = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
        let dst_ip = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);

        // UDP (RFC 768). Checksums are not verified: on loopback Linux leaves them partial
        // (checksum offload), so every captured UDP checksum is "wrong".
        let udp = &ip[ihl..total];
        assert!(udp.len() >= 8, "{ctx}: short UDP header");
        let udp_len = usize::from(be16(udp, 4));
        assert_eq!(udp_len, udp.len(), "{ctx}: UDP length disagrees with IP length");
        out.push(Datagram {
            number,
            time_us,
            src: SocketAddrV4::new(src_ip, be16(udp, 0)),
            dst: SocketAddrV4::new(dst_ip, be16(udp, 2)),
            udp_len,
            payload: udp[8..].to_vec(),
        });
    }
    (linktype, out)
}
